# GPU-driven mlx5 queues (mlx5/gpunetio, issue 28): the device functions header and ready
# kernels, compiled to the committed PTX by `make ptx`; GPU tests through the device model and
# the example program's test run on a GPU host from `make gpu-test`. The GPU-side benchmark:
#   cd mlx5/gpunetio && DQG_BENCH=1 ../../bin/gpu/mlx5_gpunetio.test -test.run TestGPUBench -test.v
GPU_TEST_PKGS += ./mlx5/gpunetio ./examples/gpunetio
PTX_SRCS      += mlx5/gpunetio/kernels/gpunetio.cu
