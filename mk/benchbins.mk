# Benchmarks on a host without Go (the GPU host): `make bench-bins` builds, here, static test
# binaries of the benchmarked packages and the ring bench into $(BENCH_BIN)/; copy the tree with
# that folder there and run the same targets against them:
#     make bench-mlx5 bench-burst BENCH_PREBUILT=1
# Each binary runs in its package's directory, as `go test` runs it, and the targets read the
# same raw output and print the same tables. Without BENCH_PREBUILT the targets build and run
# with $(GO) as before.
.PHONY: bench-bins
BENCH_BIN ?= $(BIN)/bench

bench-bins:
	@mkdir -p $(BENCH_BIN)
	$(GO) test -c -ldflags='-s -w' -o $(BENCH_BIN)/mlx5.test ./mlx5/
	$(GO) test -c -ldflags='-s -w' -o $(BENCH_BIN)/daqiri.test .
	$(GO) test -c -ldflags='-s -w' -pgo=$(BURST_PGO) -o $(BENCH_BIN)/daqiri-pgo.test .
	$(GO) build -ldflags='-s -w' -o $(BENCH_BIN)/daqiri-ringbench ./tools/daqiri-ringbench

# $(call bench_run,pkgdir,binary-name,flags): go test in the package, or its prebuilt binary
# run from the package's directory (so testdata/ resolves as under go test).
bench_run = $(if $(BENCH_PREBUILT),(cd $(1) && $(abspath $(BENCH_BIN))/$(2).test $(3)),$(GO) test $(3) $(1))
