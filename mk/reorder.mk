# reorder/: RX reorder and aggregation (CPU and GPU), memory kinds host_pinned/device (gpu.go).
#
#   make test-reorder        CPU property tests, conversions against math/big, the session hook,
#                            memory-kind checks and the UDP end-to-end test; checks that
#                            reorder/convert_loops.go is what convert_loops_gen.go writes
#   go generate ./reorder    rewrites reorder/convert_loops.go (the unrolled conversion loops)
#   make bench-reorder       CPU reorder next to memcpy here; builds the GPU bench for a GPU machine
#                            (on a GPU host it also runs upstream's kernel beside ours when
#                            `bash bench/reorder/upstream.sh fetch` put its source in .carry/upstream;
#                            run.sh builds it there with nvcc)
#   make gpu-test            (mk/gpu.mk) also builds bin/gpu/reorder.test; gpu-test-reorder adds
#                            the root package's GPU memory-kind test as bin/gpu/daqiri_root.test
#   make ptx                 (mk/gpu.mk) regenerates reorder/kernels/reorder.ptx with nvcc
.PHONY: test-reorder bench-reorder gpu-test-reorder

GPU_TEST_PKGS += ./reorder
PTX_SRCS      += reorder/kernels/reorder.cu

test-reorder:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd reorder && $(GO) run convert_loops_gen.go -o "$$tmp/loops.go" && \
		cmp -s "$$tmp/loops.go" convert_loops.go || { echo "reorder/convert_loops.go is stale: run go generate ./reorder"; exit 1; }
	$(GO) test $(GOTESTFLAGS) ./reorder ./engine
	$(GO) test $(GOTESTFLAGS) -run 'Reorder|GPUMemory' . ./integration

# CPU half here; the GPU half runs where nvidia-smi finds a GPU, else its binary is built
# ($(or $(BIN),bin)/reorder-gpubench) for a GPU machine.
bench-reorder:
	GO=$(GO) BIN=$(or $(BIN),bin) bash bench/reorder/run.sh

gpu-test-reorder: gpu-test
	$(GO) test -c -o $(GPU_BIN)/daqiri_root.test .
	@echo "root package (memory kinds): cd . && $(GPU_BIN)/daqiri_root.test -test.run GPUMemory -test.v"
