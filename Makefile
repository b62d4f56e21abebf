# daqiri — build, run, test. Area-specific targets live in mk/*.mk.
GO          ?= go
export CGO_ENABLED := 0
GOTESTFLAGS ?= -count=1 -timeout 30m
BIN         ?= bin

.PHONY: all build vet run test examples fuzz bench-socket bench-ring tools static
all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

# The main job: daqiri-bench on its embedded default (UDP over loopback, 8000-byte payloads,
# 10 s, live rate and a final table).
run:
	$(GO) run ./tools/daqiri-bench

# Every test. Tests that need root, namespaces, hugepages, a VM or a GPU skip with a message
# naming what is missing; CI runs them as root (.ci/run) with CI=true, under which a missing
# requirement other than a GPU fails the test instead (internal/testutil).
# Output: one line per package, every skipped test with its reason, the full output of any
# failure (internal/testsum condenses go test -json). The example programs (examples/) are
# packages of the module: ./... builds them and runs their tests with the rest. The first
# run in a fresh clone also builds the S3 test server (versitygw, for capture/s3 and
# daqiri-capture) into the Go cache: about 80 s once.
test:
	$(GO) vet ./...
	$(GO) build -tags nocuda ./...
	@echo "== tests (a first run in a fresh clone also builds the S3 test server, versitygw: about 80 s once)"
	@bash -o pipefail -c '$(GO) test $(GOTESTFLAGS) -json -skip "^TestMLX5Conformance$$" $$($(GO) list ./... | grep -v "/integration/vm$$") | $(GO) run ./internal/testsum'
	@echo "== race detector on the lock-free core (rings, pools, bursts, loopback; -race needs cgo, the code under test does not)"
	CGO_ENABLED=1 $(GO) test $(GOTESTFLAGS) -race ./internal/ring ./engine ./swloop
	@$(MAKE) --no-print-directory test-arm64-all
	@echo "== fuzz targets, 5 s each (make fuzz: longer)"
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s FUZZFLAGS="-parallel 1 -fuzzminimizetime 100x"
	@echo "== VM tests (one boot; every guest test listed)"
	@bash -c 'log=$$(mktemp); $(GO) test $(GOTESTFLAGS) -v ./integration/vm > $$log 2>&1; rc=$$?; \
		grep -E -- "^ *--- |^(ok|FAIL|PASS)|^ +vm_test.go:[0-9]+: (skip|boot|VM)" $$log; \
		if [ $$rc -ne 0 ]; then echo "== VM test output of the failures"; grep -B1 -A25 -E -- "--- FAIL|FAIL in the guest|panic:" $$log | head -300; fi; \
		rm -f $$log; exit $$rc'
	@if [ -x "$(QEMU_CACHED)" ]; then echo "== mlx5 conformance (the cached qemu $(QEMU_CACHED) exists)"; \
		$(MAKE) --no-print-directory test-mlx5-conformance; \
	elif [ "$$CI" = true ]; then echo "== mlx5 conformance (CI: building qemu first, 3 to 10 minutes once)"; \
		$(MAKE) --no-print-directory test-mlx5-conformance; \
	else echo "== mlx5 conformance: not run, no cached qemu at $(QEMU_CACHED) (make qemu builds it; make test-mlx5-conformance does both; CI=true does both in make test)"; fi


# The example programs only (each has a README): build them, run their tests; tests that need
# a GPU skip, naming it.
examples:
	$(GO) build ./examples/...
	$(GO) test $(GOTESTFLAGS) ./examples/...

tools:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./tools/...

# Fully static tools (no libc, no dynamic loader): the nocuda tag leaves out the CUDA, cuFile
# and NVML bindings (GPU memory kinds, GPU reorder, GDS then report that they are not built in).
# ARCH=arm64 cross-builds them for aarch64 (IGX Orin, DGX Spark, IGX Thor) into
# $(BIN)/static-arm64/; any GOARCH Go supports works the same way.
ARCH ?=
STATIC_DIR = $(BIN)/static$(if $(ARCH),-$(ARCH))
static:
	@mkdir -p $(STATIC_DIR)
	$(if $(ARCH),GOARCH=$(ARCH) )$(GO) build -tags nocuda -o $(STATIC_DIR)/ ./tools/...

# The socket engine next to iperf3 on loopback (UDP 8000 B and 1000 B, TCP); prints ratios.
bench-socket: tools
	bash bench/socket/run.sh

# The burst rings and buffer pools with upstream's pool_ring_bench cases, next to Go channels.
# UPSTREAM_RINGBENCH=path: upstream's pool_ring_bench binary for the upstream column, run
# RING_ROUNDS times (default 3), each time just before a round of this tool's runs; both columns
# are medians over the rounds (one upstream run compared a sample with a median, and the GPU
# host's cores have spells of seconds at ~0.6x: BENCHMARKS.md, issue 31 fifth round).
# BENCH_PREBUILT=1 runs the binary `make bench-bins` built (mk/benchbins.mk), for hosts without Go.
RING_ROUNDS ?= 3
bench-ring:
	$(if $(BENCH_PREBUILT),$(BENCH_BIN)/daqiri-ringbench,$(GO) run ./tools/daqiri-ringbench) $(if $(UPSTREAM_RINGBENCH),-upstream $(UPSTREAM_RINGBENCH) -rounds $(RING_ROUNDS))

include $(sort $(wildcard mk/*.mk))
