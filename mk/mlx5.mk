# mlx5/: the PRM vocabulary checked against NVIDIA's headers (mlx5/prm, TestLayout needs the
# packages in .ci/apt.d/mlx5.txt) and the ConnectX device model (mlx5/model).
#
#   make test-mlx5        the mlx5 unit tests, the layout test included
#   make test-mlx5-fuzz   short runs of the fuzz targets: command bytes (FuzzExec), command-queue
#                         entries and mailboxes (FuzzCmdQueue), WQE parsing (FuzzWQE), received
#                         frames through steering, RSS and the RQs (FuzzReceive); seed
#                         corpora in mlx5/model/testdata/fuzz and .../datapath/testdata/fuzz.
#                         `make test` runs them with the other fuzz targets (mk/fuzz.mk);
#                         MLX5_FUZZTIME sets each run's length here.
.PHONY: test-mlx5 test-mlx5-fuzz

MLX5_FUZZTIME ?= 5s

FUZZ_TARGETS += ./mlx5/model:FuzzExec ./mlx5/model:FuzzCmdQueue ./mlx5/model/internal/datapath:FuzzWQE ./mlx5/model/internal/datapath:FuzzReceive

test-mlx5:
	$(GO) test $(GOTESTFLAGS) ./mlx5/...

test-mlx5-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzExec$$' -fuzztime $(MLX5_FUZZTIME) -fuzzminimizetime 100x -parallel 1 ./mlx5/model
	$(GO) test -run '^$$' -fuzz '^FuzzCmdQueue$$' -fuzztime $(MLX5_FUZZTIME) -fuzzminimizetime 100x -parallel 1 ./mlx5/model
	$(GO) test -run '^$$' -fuzz '^FuzzWQE$$' -fuzztime $(MLX5_FUZZTIME) -fuzzminimizetime 100x -parallel 1 ./mlx5/model/internal/datapath
	$(GO) test -run '^$$' -fuzz '^FuzzReceive$$' -fuzztime $(MLX5_FUZZTIME) -fuzzminimizetime 100x -parallel 1 ./mlx5/model/internal/datapath
