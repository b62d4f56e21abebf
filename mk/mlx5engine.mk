# mlx5/: the raw Ethernet engine (engine mlx5) on the ConnectX device model.
#
#   make bench-mlx5   the engine's own cost per packet, apart from the device's (issue 31):
#                     RX (BenchmarkRX: 64 B and 1500 B, 1 and 4 queues, CQE compression on
#                     and off) times poll → burst → free → stride return and repost →
#                     doorbell over completions a stand-in for the device wrote before the
#                     timer; TX (BenchmarkTX) times send (eMPW WQEs into the SQ, the doorbell)
#                     and the completion poll, a stand-in on the same core taking the WQEs and
#                     writing the CQEs while the timer is stopped (TXModelFed: the model does,
#                     on its own goroutine, so SQ and CQ lines move between cores); SWLoop is the software loopback engine on the same packets;
#                     RXModel is the receive path end to end with the model writing (its
#                     speed more than the engine's; fewer packets). ns/op is meaningless
#                     there: read ns/pkt, Mpps, allocs/pkt. The raw output goes to
#                     $(BIN)/bench-mlx5.txt, then a table (mk/benchtable.awk) beside the goals,
#                     the figures before issue 31 and the published anchors. Results in
#                     BENCHMARKS.md. MLX5_COUNT rounds of every case, round r pinning the
#                     benchmark goroutine to the r-th allowed core down from the last
#                     (DAQIRI_BENCH_CORE=last-r; =n or off keeps one core; on the GPU host
#                     DAQIRI_BENCH_WAIT=fast starts each run in its fast speed, mk/burst.mk
#                     says why), with the collector off; gcs is collections during the run
#                     (0 expected).
#
# The engine's GPU tests (issue 27: the model writing CUDA memory — mlx5/gpu_test.go, the GPU
# reorder plan fed by the engine in the root package's mlx5gpu_test.go, upstream's GPU examples
# under daqiri-bench --model-ports) go into the GPU test binaries (`make gpu-test`; the root
# package's is bin/gpu/daqiri.test); run them there with -test.run GPU.
.PHONY: bench-mlx5

GPU_TEST_PKGS += . ./mlx5 ./tools/daqiri-bench

MLX5_BENCHTIME ?= 2000000x
MLX5_MODELTIME ?= 100000x
MLX5_COUNT ?= 5

bench-mlx5:
	@mkdir -p $(BIN)
	@: > $(BIN)/bench-mlx5.txt
	@set -e; core=$${DAQIRI_BENCH_CORE:-}; for r in $$(seq 0 $$(($(MLX5_COUNT) - 1))); do \
		export DAQIRI_BENCH_CORE=$${core:-last-$$r}; \
		echo "bench-mlx5: round $$((r + 1)) of $(MLX5_COUNT), DAQIRI_BENCH_CORE=$$DAQIRI_BENCH_CORE"; \
		$(call bench_run,./mlx5/,mlx5,-test.run '^$$' -test.bench '^Benchmark(RX|TX|TXModelFed|SWLoop)$$' -test.benchtime $(MLX5_BENCHTIME) -test.count 1) >> $(BIN)/bench-mlx5.txt || { cat $(BIN)/bench-mlx5.txt; exit 1; }; \
	done
	$(call bench_run,./mlx5/,mlx5,-test.run '^$$' -test.bench '^BenchmarkRXModel$$' -test.benchtime $(MLX5_MODELTIME) -test.count 3) >> $(BIN)/bench-mlx5.txt || { cat $(BIN)/bench-mlx5.txt; exit 1; }
	@cat $(BIN)/bench-mlx5.txt
	@echo
	@awk -f mk/benchtable.awk $(BIN)/bench-mlx5.txt
