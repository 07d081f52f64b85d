# rnic — a software RDMA NIC. See README.md.

GO          ?= go
BIN         ?= bin
FUZZTIME    ?= 10s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages whose tests run with the race detector (engines and transports own
# state touched from several goroutines).
RACE_PKGS   ?= ./transport/... ./memory/... ./nic/... ./roce/... ./iwarp/... ./tap/...

# The passthrough backend (nic/passthrough) behind the build tag verbs:
# cgo with rdma-core's headers (apt: libibverbs-dev librdmacm-dev).
VERBS_PKG   ?= ./nic/passthrough
VERBS_HDRS  := /usr/include/infiniband/verbs.h /usr/include/rdma/rdma_cma.h

# The drop-in libibverbs.so.1 (nic/rnicd/dropin): C against the system's
# public verbs headers, the public symbols of rdma-core 44 with their
# versions, so unmodified programs load it with LD_LIBRARY_PATH=$(LIBDIR)
# (or rnic exec). Its own Makefile (nic/rnicd/dropin/libibverbs) has the
# flags. Needs gcc and libibverbs-dev; without them make build says so and
# builds the Go programs only.
CC          ?= gcc
LIBDIR      ?= lib
DROPIN_LIB  := nic/rnicd/dropin/libibverbs
DROPIN_CM   := nic/rnicd/dropin/librdmacm
HAVE_CC_VERBS := $(shell command -v $(CC) >/dev/null 2>&1 && [ -e /usr/include/infiniband/verbs.h ] && echo yes)

.PHONY: all build image lib lib-asan lib-clang abi test test-race test-verbs demo bench bench-go fuzz lint interop conform-lab conform-self soak clean

all: build

# The revision --version prints where the toolchain stamps none (a build
# from a tarball, or -buildvcs=false): git's, when this is a checkout.
REVISION    ?= $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS     := $(if $(REVISION),-X github.com/rnic/rnic/cmd/internal/version.Revision=$(REVISION))

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/rnic ./cmd/rnic
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/rnicd ./cmd/rnicd
ifeq ($(HAVE_CC_VERBS),yes)
	@if [ -e $(DROPIN_LIB)/Makefile ]; then $(MAKE) --no-print-directory lib; \
	else echo "build: $(LIBDIR)/libibverbs.so.1 not built: no $(DROPIN_LIB)/Makefile in this checkout"; fi
else
	@echo "build: $(LIBDIR)/libibverbs.so.1 (the drop-in libibverbs for C programs) not built: apt-get install gcc libibverbs-dev"
endif

# image: rnic's container image (cmd/internal/mkimage): rnic and rnicd
# built static, the drop-in libraries, in one layer, as an OCI layout in
# $(BIN)/rnic-image and the same as one archive, $(BIN)/rnic-image.tar,
# named $(IMAGE); the Kubernetes manifests in cmd/rnic/k8s run it. No
# registry and no container tool: podman load -i, ctr -n k8s.io images
# import, or skopeo copy oci-archive:... to a registry take it from there.
# Its files are stamped with the last commit's time (SOURCE_DATE_EPOCH).
IMAGE       ?= localhost/rnic:latest
IMAGE_BIN   := $(BIN)/image
image: lib
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(IMAGE_BIN)/rnic ./cmd/rnic
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(IMAGE_BIN)/rnicd ./cmd/rnicd
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
		$(GO) run ./cmd/internal/mkimage -bin $(IMAGE_BIN) -lib $(LIBDIR) -name $(IMAGE) -o $(BIN)/rnic-image

# lib: the drop-in library; lib-asan: the same under AddressSanitizer, in
# $(LIBDIR)/asan (for programs built with -fsanitize=address, or run with
# LD_PRELOAD of the compiler's libasan.so).
# librdmacm.so.1 (nic/rnicd/dropin/librdmacm) links to that libibverbs.
lib:
	@$(MAKE) --no-print-directory -C $(DROPIN_LIB) CC=$(CC) OUT=$(abspath $(LIBDIR))
	@if [ -e $(DROPIN_CM)/Makefile ] && [ -e /usr/include/rdma/rdma_cma.h ]; then \
		$(MAKE) --no-print-directory -C $(DROPIN_CM) CC=$(CC) OUT=$(abspath $(LIBDIR)); \
	else echo "lib: $(LIBDIR)/librdmacm.so.1 not built: apt-get install librdmacm-dev"; fi
lib-asan:
	@$(MAKE) --no-print-directory -C $(DROPIN_LIB) CC=$(CC) OUT=$(abspath $(LIBDIR))/asan SAN=1
	@if [ -e $(DROPIN_CM)/Makefile ] && [ -e /usr/include/rdma/rdma_cma.h ]; then \
		$(MAKE) --no-print-directory -C $(DROPIN_CM) CC=$(CC) OUT=$(abspath $(LIBDIR))/asan SAN=1; fi

# lib-clang: both libraries built by clang into $(LIBDIR)/clang, with the
# same -Wall -Wextra -Werror: the C must be clean under both compilers.
CLANG       ?= clang
lib-clang:
	@if ! command -v $(CLANG) >/dev/null 2>&1; then \
		echo "lib-clang: not built: no $(CLANG) (apt-get install clang)"; \
	elif [ "$(HAVE_CC_VERBS)" != yes ]; then \
		echo "lib-clang: not built: apt-get install gcc libibverbs-dev"; \
	else \
		$(MAKE) --no-print-directory -C $(DROPIN_LIB) CC=$(CLANG) OUT=$(abspath $(LIBDIR))/clang && \
		if [ -e /usr/include/rdma/rdma_cma.h ]; then \
			$(MAKE) --no-print-directory -C $(DROPIN_CM) CC=$(CLANG) OUT=$(abspath $(LIBDIR))/clang; \
		else echo "lib-clang: librdmacm.so.1 not built: apt-get install librdmacm-dev"; fi; \
	fi

# The whole test suite: vet, every package's tests, then the engine and
# transport packages again under the race detector.
# As root (CI) the TAP-mode tests run too: namespaces, bridges and TAPs of
# their own; otherwise they skip and say why.
test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)

# The passthrough backend's tagged build on this host: vet, tests, and the
# tests again under the race detector. Its device tests skip, saying so, on
# a host without RDMA devices; in the lab's rxe and siw guests they run
# (make interop's passthrough rows, or bash nic/passthrough/lab-test.sh).
# Needs cgo and libibverbs-dev + librdmacm-dev (.ci/run installs them);
# make test does not.
test-verbs:
	$(GO) vet -tags verbs $(VERBS_PKG)
	$(GO) test -count=1 -tags verbs $(VERBS_PKG)
	$(GO) test -count=1 -race -tags verbs $(VERBS_PKG)

# The main job on the embedded default: two NICs over loopback UDP (kernel
# sockets: no root, no hardware) perform every operation, explained step by
# step; the capture is then checked like a real one.
demo: build
	$(BIN)/rnic demo --pcap demo.pcap
	@out=$$($(BIN)/rnic decode demo.pcap) && echo "$$out" | tail -n 1

# One table of the performance workloads (rnic perf one and two processes,
# through rnicd, rnic sim, QP setup), each against its baseline from the
# same run: a couple of minutes. BENCH_FLAGS=-quick: a tenth of the work.
bench: build
	GO=$(GO) $(GO) run ./cmd/internal/benchtable -bin $(BIN) $(BENCH_FLAGS)

# Every go test benchmark of every package.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs every native fuzz target for FUZZTIME each, then the drop-in
# libraries' decoder fuzzers (C, ASan + UBSan, seeded with the golden
# bodies of nic/rnicd/proto/testdata/golden) where gcc and the headers are.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done
ifeq ($(HAVE_CC_VERBS),yes)
	@$(MAKE) --no-print-directory -C $(DROPIN_LIB) fuzz OUT=$(abspath $(LIBDIR))/fuzz
	@if [ -e /usr/include/rdma/rdma_cma.h ]; then $(MAKE) --no-print-directory -C $(DROPIN_CM) fuzz OUT=$(abspath $(LIBDIR))/fuzz; \
	else echo "fuzz: librdmacm's decoders not fuzzed: apt-get install librdmacm-dev"; fi
else
	@echo "fuzz: the drop-in library's decoders not fuzzed: apt-get install gcc libibverbs-dev"
endif

# rnic <-> rnic under seeded faults on TAPs (root): the rows make test runs
# in CI (cmd/rnic's TestFaultRows), with one line of figures per row:
# injected faults, retransmissions, timeouts, checksum drops, seconds.
.PHONY: fault-rows
fault-rows:
	@out=$$($(GO) test -count=1 -v -run '^TestFaultRows$$' ./cmd/rnic/ 2>&1); st=$$?; \
	echo "$$out" | grep -E ' row |^(ok|FAIL|--- FAIL)|faultrows_test'; exit $$st

# make soak: our verifying soak program (nic/rnicd/dropin/soak: RC WRITE,
# READ, SEND, atomics over many QPs, every byte checked) through two
# unprivileged rnicd daemons with seeded faults on their wires (SOAK_FAULTS,
# rnicd's --faults keys; none for a clean wire), SOAK_OPS operations; then
# both daemons must hold the descriptors, mappings and memory they held
# before, and no object. make test runs a short one (20,000 operations of
# up to 256 KiB, under AddressSanitizer); this one runs the soak at -O2 (SOAK_ASAN=1 for
# the sanitizer). SOAK_SEED replays a run; SOAK_QPS, SOAK_MAX_SIZE shape it.
SOAK_OPS    ?= 1000000
SOAK_FAULTS ?= loss=0.01,reorder=0.01,dup=0.005,corrupt=0.001
SOAK_ASAN   ?= 0
SOAK_MAX_SIZE ?= 1048576
soak:
	SOAK_OPS=$(SOAK_OPS) SOAK_FAULTS=$(SOAK_FAULTS) SOAK_ASAN=$(SOAK_ASAN) SOAK_MAX_SIZE=$(SOAK_MAX_SIZE) \
		$(GO) test -count=1 -v -timeout 0 -run '^TestSoak$$' ./nic/rnicd/dropin/

# Interop with Linux rxe and siw (root; boots QEMU guests of the lab in
# cmd/interop/lab, whose image it builds or brings up to date first): every pairing of rnic with rxe and siw in both
# roles, each capture decoded and checked by tshark, a table at the end.
# INTEROP_FLAGS=--smoke runs the CI subset, --only REGEXP selects rows,
# --list prints every row's commands.
interop:
	$(GO) run ./cmd/interop $(INTEROP_FLAGS)

# rnic conform against rnic itself through the command line, as a user runs
# it (an agent process per transport on loopback, the tester beside it):
# every RoCEv2 and iWARP case must pass. The runs' JSON, JUnit, captures and
# their report (rnic conform report) go to CONFORM_SELF_OUT. Half a minute.
CONFORM_SELF_OUT ?= conform-self
conform-self: build
	bash cmd/internal/conform/self.sh $(BIN)/rnic $(CONFORM_SELF_OUT)

# rnic conform against Linux rxe (RoCEv2 cases) and siw (iWARP cases) in the
# lab (root): the agent, built with -tags verbs, in the guests; the tester on
# the bridge; a table per device, JSON, JUnit and captures in the output dir;
# the runs' JSON and their report (rnic conform report) in CONFORM_REPORT,
# the published report of Linux rxe and siw that the README shows.
# CONFORM_FLAGS=--only PATTERN selects cases (the report then stays in the
# output dir), --keep leaves the guests up.
CONFORM_REPORT ?= testdata/conform-lab
conform-lab:
	$(GO) run ./cmd/interop --conform --report $(CONFORM_REPORT) $(CONFORM_FLAGS)

# The tagged passthrough build is linted too where rdma-core's headers are
# installed (CI installs them); elsewhere lint says it left it out.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@if ls $(VERBS_HDRS) >/dev/null 2>&1; then \
	  echo "$(GO) vet -tags verbs $(VERBS_PKG)" && $(GO) vet -tags verbs $(VERBS_PKG) && \
	  echo "$(GO) run $(STATICCHECK) -tags verbs $(VERBS_PKG)" && $(GO) run $(STATICCHECK) -tags verbs $(VERBS_PKG); \
	else \
	  echo "lint: -tags verbs $(VERBS_PKG) not linted: libibverbs-dev and librdmacm-dev are not installed"; \
	fi

clean:
	rm -rf $(BIN) $(LIBDIR) demo.pcap

# make install: the programs in $(PREFIX)/bin; the drop-in libraries (when
# make build could build them) in $(PREFIX)/lib/rnic, a directory of their
# own so that they shadow the system's libibverbs only for what rnic exec
# runs (rnic exec finds ../lib/rnic beside itself); rnicd's systemd units,
# for the system and the user instance; man pages generated from the
# programs' help. DESTDIR stages the tree for a package. make uninstall
# removes what make install put there.
PREFIX      ?= /usr/local
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
INSTALL     ?= install
# Fixed relative to each other: rnic exec looks for the libraries in
# ../lib/rnic beside the rnic binary.
INSTALL_BIN := $(PREFIX)/bin
INSTALL_LIB := $(PREFIX)/lib/rnic
# Where make man writes the pages (man1/, man8/).
MANOUT      ?= $(BIN)/man
DROPIN_SOS  := libibverbs.so.1 librdmacm.so.1
# rnic.lua, the Wireshark plugin with rnic's ICRC and MPA CRC verdicts, goes
# where this machine's Wireshark loads Lua plugins from (tshark -G folders),
# else beside rnic's other shared files (tshark -X lua_script:FILE loads it).
WIRESHARK_LUADIR ?= $(or $(shell tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p'),$(PREFIX)/share/rnic/wireshark)
WIRESHARK_LUA    := cmd/internal/wireshark/rnic.lua
UNITS       := cmd/rnicd/systemd/rnicd.service cmd/rnicd/systemd/rnicd.socket

.PHONY: man install uninstall

man: build
	$(GO) run ./cmd/internal/manpage -rnic $(BIN)/rnic -rnicd $(BIN)/rnicd -o $(MANOUT)

install: build man
	$(INSTALL) -d $(DESTDIR)$(INSTALL_BIN) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR)
	$(INSTALL) -m 755 $(BIN)/rnic $(BIN)/rnicd $(DESTDIR)$(INSTALL_BIN)
	@if [ -e $(LIBDIR)/libibverbs.so.1 ]; then \
		echo "$(INSTALL) -d $(DESTDIR)$(INSTALL_LIB)" && $(INSTALL) -d $(DESTDIR)$(INSTALL_LIB) && \
		for so in $(DROPIN_SOS); do if [ -e $(LIBDIR)/$$so ]; then \
			echo "$(INSTALL) -m 755 $(LIBDIR)/$$so $(DESTDIR)$(INSTALL_LIB)" && $(INSTALL) -m 755 $(LIBDIR)/$$so $(DESTDIR)$(INSTALL_LIB) || exit 1; fi; done; \
	else echo "install: the drop-in libraries are not built (needs gcc and libibverbs-dev): rnic exec will not run C programs"; fi
	$(INSTALL) -d $(DESTDIR)$(WIRESHARK_LUADIR)
	$(INSTALL) -m 644 $(WIRESHARK_LUA) $(DESTDIR)$(WIRESHARK_LUADIR)
	$(INSTALL) -m 644 $(MANOUT)/man1/*.1 $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 644 $(MANOUT)/man8/*.8 $(DESTDIR)$(MANDIR)/man8
	@for dir in $(UNITDIR) $(USERUNITDIR); do for u in $(UNITS); do \
		echo "sed s|@bindir@|$(INSTALL_BIN)| $$u > $(DESTDIR)$$dir/$$(basename $$u)"; \
		sed 's|@bindir@|$(INSTALL_BIN)|g' $$u > $(DESTDIR)$$dir/$$(basename $$u) && chmod 644 $(DESTDIR)$$dir/$$(basename $$u) || exit 1; \
	done; done
	@if [ -z "$(DESTDIR)" ]; then echo "install: systemctl daemon-reload && systemctl enable --now rnicd.socket starts rnicd on its first client (man rnicd)"; fi

uninstall:
	rm -f $(DESTDIR)$(INSTALL_BIN)/rnic $(DESTDIR)$(INSTALL_BIN)/rnicd
	rm -f $(addprefix $(DESTDIR)$(INSTALL_LIB)/,$(DROPIN_SOS))
	rmdir $(DESTDIR)$(INSTALL_LIB) 2>/dev/null || true
	rm -f $(DESTDIR)$(WIRESHARK_LUADIR)/rnic.lua
	rm -f $(DESTDIR)$(MANDIR)/man1/rnic.1 $(DESTDIR)$(MANDIR)/man1/rnic-*.1 $(DESTDIR)$(MANDIR)/man8/rnicd.8
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS))) $(addprefix $(DESTDIR)$(USERUNITDIR)/,$(notdir $(UNITS)))
