# mlx5/: the raw Ethernet engine (engine mlx5) on the ConnectX device model.
#
#   make bench-mlx5   the engine's own cost per packet, apart from the model's: the model fills
#                     the CQs and stride buffers outside the timer, the timed loop is poll →
#                     burst → free → repost (RX; 64 B and 1500 B, 1 and 4 queues, CQE
#                     compression on and off) and post → doorbell, completion poll (TX), next
#                     to the same packets through the software loopback engine in the same
#                     run. ns/op is ns per packet. Results in BENCHMARKS.md.
#
# The engine's GPU tests (issue 27: the model writing CUDA memory — mlx5/gpu_test.go, the GPU
# reorder plan fed by the engine in the root package's mlx5gpu_test.go, upstream's GPU examples
# under daqiri-bench --model-ports) go into the GPU test binaries (`make gpu-test`; the root
# package's is bin/gpu/daqiri.test); run them there with -test.run GPU.
.PHONY: bench-mlx5

GPU_TEST_PKGS += . ./mlx5 ./tools/daqiri-bench

MLX5_BENCHTIME ?= 2000000x

bench-mlx5:
	$(GO) test -run '^$$' -bench '^Benchmark(RX|TX|SWLoop)$$' -benchtime $(MLX5_BENCHTIME) -count 3 ./mlx5/
