// Test kernels for package cudart's GPU tests. The committed kernels.ptx beside this file is
// generated from it by `make ptx` (nvcc) and loaded at run time with cuModuleLoadData; Go
// code never needs nvcc. The parameter lists mix widths (8, 16, 32, 64-bit, float, double,
// pointers) on purpose, to check cudart's argument packing against what the compiler expects.
#include <stdint.h>

// y[i] = (a*x[i] + b) >> (shift & 31), all modulo 2^32.
extern "C" __global__ void affine_u32(const uint32_t *x, uint32_t *y, uint32_t a, uint32_t b,
                                      uint8_t shift, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        y[i] = (a * x[i] + b) >> (shift & 31);
}

// y[i] = fma(x[i], a, (double)b) + (double)c. fma is explicit so that the host can reproduce
// every bit with math.FMA.
extern "C" __global__ void fma_f64(const double *x, double *y, double a, float b, int16_t c,
                                   unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fma(x[i], a, (double)b) + (double)c;
}

// Busy-waits about `cycles` GPU clock cycles, then writes v to *flag: keeps a stream busy so
// that ordering between streams is actually exercised.
extern "C" __global__ void spin_then_set(unsigned long long cycles, uint32_t *flag, uint32_t v)
{
    long long start = clock64();
    while ((unsigned long long)(clock64() - start) < cycles) {
    }
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *flag = v;
}

// Does nothing: measures launch overhead and checks a launch without parameters.
extern "C" __global__ void noop(void) {}
