# What both drop-in libraries' Makefiles share: the compiler and its
# warnings, the shared field codec (rn_codec.h), every .c of the library's
# folder, and SAN=1 for AddressSanitizer. The top-level Makefile calls
# each library's Makefile with OUT=<lib dir>.
CC      ?= gcc
OUT     ?= ../../../../lib
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -std=gnu11
INC     := -I../include
SHARED  := ../include/rn_codec.h ../include/rnicd_proto.h ../include/common.mk
SRCS    := $(sort $(wildcard *.c))
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address -fno-omit-frame-pointer
LDSAN   := -fsanitize=address
endif
