# SPDX-License-Identifier: BSD-2-Clause
# What both drop-in libraries' Makefiles share: the compiler and its
# warnings, the shared headers (include/), every .c of the library's
# folder, and SAN=1 for AddressSanitizer. The top-level Makefile calls
# each library's Makefile with OUT=<lib dir>.
CC      ?= gcc
OUT     ?= ../../../../lib
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -std=gnu11
INC     := -I../include
SHARED  := ../include/rn_codec.h ../include/rn_container.h ../include/rn_corpus.h ../include/rnicd_proto.h ../include/common.mk
# The golden message bodies the Go encoder wrote: the fuzzers' extra seeds
# and what make golden decodes.
GOLDEN  ?= ../../proto/testdata/golden
SRCS    := $(sort $(wildcard *.c))
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address -fno-omit-frame-pointer
LDSAN   := -fsanitize=address
endif
