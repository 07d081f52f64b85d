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

.PHONY: all build test test-race test-verbs demo bench bench-go fuzz lint interop clean

all: build

build:
	$(GO) build -o $(BIN)/rnic ./cmd/rnic
	$(GO) build -o $(BIN)/rnicd ./cmd/rnicd

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

# One table of issue 19's workloads (rnic perf one and two processes,
# through rnicd, rnic sim, QP setup), each against its baseline from the
# same run: a couple of minutes. BENCH_FLAGS=-quick: a tenth of the work.
bench: build
	GO=$(GO) $(GO) run ./cmd/internal/benchtable -bin $(BIN) $(BENCH_FLAGS)

# Every go test benchmark of every package.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs every native fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# Interop with Linux rxe and siw (root; boots QEMU guests from ../shared/lab,
# building the lab image first if needed): every pairing of issue 7 in both
# roles, each capture decoded and checked by tshark, a table at the end.
# INTEROP_FLAGS=--smoke runs the CI subset, --only REGEXP selects rows,
# --list prints every row's commands.
interop:
	$(GO) run ./cmd/interop $(INTEROP_FLAGS)

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
	rm -rf $(BIN) demo.pcap
