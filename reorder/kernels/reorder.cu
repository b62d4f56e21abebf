// GPU kernels of package reorder. `make ptx` compiles this file with nvcc to reorder.ptx
// beside it, which is committed and embedded in the Go package; the driver JIT-compiles it
// for the GPU at load time, so Go builds never need nvcc.
//
// One block assembles `spb` consecutive output slots of one aggregate (several small slots per
// block, so that a block's one read of its slot words — which may sit in mapped host memory,
// a PCIe round trip away — is shared by more work). The host describes the aggregate with
// one 64-bit word per slot: (byte offset of the payload in the source region << 24) | payload
// length, or all ones for a slot no packet filled. The kernel copies (or converts) the
// payload into the slot and zero-fills the rest of the slot, so the aggregate never holds
// stale bytes. Conversions follow reorder/convert.go exactly, so GPU and CPU aggregates are
// bit-identical: signed samples (int4: two per byte, high nibble first; int8; int16 and int32
// little-endian, or big-endian when `big` is set) become fp16, bf16, fp32 (round to nearest,
// ties to even, directly from the integer), fp64 (exact) or int32, written little-endian.
#include <stdint.h>

#define SLOT_MISSING 0xffffffffffffffffull
#define LEN_BITS 24
#define MAX_SPB 16

// Reads the words of this block's slots (first = blockIdx.x*spb, at most spb of them, none
// past nslots) into sh, in one round trip, and returns how many there are.
__device__ __forceinline__ unsigned int slot_words(const unsigned long long *__restrict__ slots, unsigned int nslots,
                                                   unsigned int spb, unsigned long long *sh)
{
    unsigned int first = blockIdx.x * spb;
    unsigned int n = nslots - first < spb ? nslots - first : spb;
    if (threadIdx.x < n)
        sh[threadIdx.x] = slots[first + threadIdx.x];
    __syncthreads();
    return n;
}

// Zero-fills n bytes at d with the block's threads: bytes up to 16-byte alignment, then
// 16-byte stores.
__device__ __forceinline__ void zero_bytes(unsigned char *d, unsigned int n)
{
    unsigned int t = threadIdx.x, nt = blockDim.x;
    unsigned int head = (unsigned int)((16u - ((uintptr_t)d & 15u)) & 15u);
    if (head > n)
        head = n;
    for (unsigned int i = t; i < head; i += nt)
        d[i] = 0;
    unsigned int body = (n - head) / 16u;
    uint4 *d4 = (uint4 *)(d + head);
    for (unsigned int i = t; i < body; i += nt)
        d4[i] = make_uint4(0, 0, 0, 0);
    for (unsigned int i = head + body * 16u + t; i < n; i += nt)
        d[i] = 0;
}

// Copies n bytes from s to d with the block's threads. Where source and destination are
// equally aligned modulo 16 the body moves in 16-byte words, four per thread in flight;
// modulo 4, in 4-byte words; otherwise destination words are assembled from two aligned
// source words (reading whole aligned words never leaves the region: allocations are
// multiples of 64 KiB).
__device__ __forceinline__ void copy_bytes(unsigned char *__restrict__ d, const unsigned char *__restrict__ s, unsigned int n)
{
    unsigned int t = threadIdx.x, nt = blockDim.x;
    uintptr_t da = (uintptr_t)d, sa = (uintptr_t)s;
    if (((da ^ sa) & 15u) == 0) {
        unsigned int head = (unsigned int)((16u - (da & 15u)) & 15u);
        if (head > n)
            head = n;
        for (unsigned int i = t; i < head; i += nt)
            d[i] = s[i];
        unsigned int body = (n - head) / 16u;
        uint4 *d4 = (uint4 *)(d + head);
        const uint4 *s4 = (const uint4 *)(s + head);
        unsigned int i = t;
        for (; i + 3u * nt < body; i += 4u * nt) {
            uint4 a = s4[i], b = s4[i + nt], c = s4[i + 2u * nt], e = s4[i + 3u * nt];
            d4[i] = a;
            d4[i + nt] = b;
            d4[i + 2u * nt] = c;
            d4[i + 3u * nt] = e;
        }
        for (; i < body; i += nt)
            d4[i] = s4[i];
        for (unsigned int k = head + body * 16u + t; k < n; k += nt)
            d[k] = s[k];
        return;
    }
    unsigned int head = (unsigned int)((4u - (da & 3u)) & 3u);
    if (head > n)
        head = n;
    for (unsigned int i = t; i < head; i += nt)
        d[i] = s[i];
    unsigned int body = (n - head) / 4u;
    uint32_t *d32 = (uint32_t *)(d + head);
    const unsigned char *sb = s + head;
    if ((((uintptr_t)sb) & 3u) == 0) {
        const uint32_t *s32 = (const uint32_t *)sb;
        for (unsigned int i = t; i < body; i += nt)
            d32[i] = s32[i];
    } else {
        const uint32_t *s32 = (const uint32_t *)((uintptr_t)sb & ~(uintptr_t)3);
        unsigned int sh = (unsigned int)(((uintptr_t)sb & 3u) * 8u);
        for (unsigned int i = t; i < body; i += nt)
            d32[i] = __funnelshift_r(s32[i], s32[i + 1], sh);
    }
    for (unsigned int k = head + body * 4u + t; k < n; k += nt)
        d[k] = s[k];
}

// Copies each slot's payload (no conversion); slot_len bytes per slot, nslots slots, spb
// (1..MAX_SPB) slots per block.
extern "C" __global__ void reorder_copy(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                        unsigned char *__restrict__ out, unsigned int slot_len, unsigned int nslots,
                                        unsigned int spb)
{
    __shared__ unsigned long long sh[MAX_SPB];
    unsigned int ns = slot_words(slots, nslots, spb, sh);
    for (unsigned int k = 0; k < ns; k++) {
        unsigned long long w = sh[k];
        unsigned char *d = out + (size_t)(blockIdx.x * spb + k) * slot_len;
        unsigned int n = 0;
        if (w != SLOT_MISSING) {
            n = (unsigned int)(w & ((1ull << LEN_BITS) - 1));
            if (n > slot_len)
                n = slot_len;
            copy_bytes(d, src + (w >> LEN_BITS), n);
        }
        zero_bytes(d + n, slot_len - n);
    }
}

// The bits of the binary floating-point number with EB exponent and MB fraction bits nearest
// to v, ties to even; past the largest finite value, infinity. Same steps as IntToFloatBits.
template <int EB, int MB>
__device__ __forceinline__ uint32_t int_to_float_bits(int32_t v)
{
    if (v == 0)
        return 0;
    uint32_t sign = v < 0 ? 1u : 0u;
    uint32_t a = sign ? 0u - (uint32_t)v : (uint32_t)v;
    int p = 31 - __clz(a);
    uint32_t q;
    if (p <= MB) {
        q = a << (MB - p);
    } else {
        int sh = p - MB;
        q = a >> sh;
        uint32_t rem = a & ((1u << sh) - 1u), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) {
            q++;
            if (q >> (MB + 1)) {
                q >>= 1;
                p++;
            }
        }
    }
    const uint32_t bias = (1u << (EB - 1)) - 1u, maxe = (1u << EB) - 1u;
    uint32_t e = (uint32_t)p + bias;
    if (e >= maxe)
        return (sign << (EB + MB)) | (maxe << MB);
    return (sign << (EB + MB)) | (e << MB) | (q & ((1u << MB) - 1u));
}

// Output kinds.
#define OUT_F16 0
#define OUT_BF16 1
#define OUT_F32 2
#define OUT_F64 3
#define OUT_I32 4

template <int OUT> struct out_bytes {
    static const int n = (OUT == OUT_F64) ? 8 : ((OUT == OUT_F16 || OUT == OUT_BF16) ? 2 : 4);
};

// Sample j (0-based) of the little-endian byte string held in words w (IN bits per sample).
template <int IN>
__device__ __forceinline__ int32_t decode(const uint32_t *w, int j, bool big)
{
    if (IN == 4) {
        uint32_t b = (w[j >> 3] >> (((j >> 1) & 3) * 8)) & 0xffu;
        uint32_t nib = (j & 1) ? (b & 15u) : (b >> 4);
        return ((int32_t)(nib << 28)) >> 28;
    }
    if (IN == 8)
        return (int32_t)(int8_t)((w[j >> 2] >> ((j & 3) * 8)) & 0xffu);
    if (IN == 16) {
        uint32_t h = (w[j >> 1] >> ((j & 1) * 16)) & 0xffffu;
        if (big)
            h = ((h & 0xffu) << 8) | (h >> 8);
        return (int32_t)(int16_t)h;
    }
    uint32_t x = w[j];
    if (big)
        x = __byte_perm(x, 0, 0x0123);
    return (int32_t)x;
}

// Sample e of a payload in memory at s, byte by byte (any alignment).
template <int IN>
__device__ __forceinline__ int32_t decode_at(const unsigned char *__restrict__ s, unsigned int e, bool big)
{
    if (IN == 4) {
        uint32_t b = s[e >> 1];
        uint32_t nib = (e & 1) ? (b & 15u) : (b >> 4);
        return ((int32_t)(nib << 28)) >> 28;
    }
    if (IN == 8)
        return (int32_t)(int8_t)s[e];
    if (IN == 16) {
        uint32_t b0 = s[2 * e], b1 = s[2 * e + 1];
        return (int32_t)(int16_t)(big ? ((b0 << 8) | b1) : ((b1 << 8) | b0));
    }
    uint32_t b0 = s[4 * e], b1 = s[4 * e + 1], b2 = s[4 * e + 2], b3 = s[4 * e + 3];
    return (int32_t)(big ? ((b0 << 24) | (b1 << 16) | (b2 << 8) | b3) : ((b3 << 24) | (b2 << 16) | (b1 << 8) | b0));
}

// Single roundings of a float that holds an integer exactly (|v| ≥ 1, so never subnormal),
// done on the float's bits: add half an ulp of the target minus one, plus the lowest kept bit
// (ties to even), and drop the extra fraction bits; a carry rolls into the exponent. Integer
// code on purpose: an inline-asm cvt.rn.f16.f32 produced wrong bytes in some lanes here.
__device__ __forceinline__ uint32_t float_to_f16_bits(float f)
{
    uint32_t u = __float_as_uint(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a == 0)
        return sign;
    a = (a + 0xfffu + ((a >> 13) & 1u)) >> 13; // float exponent (bias 127) << 10 | 10-bit fraction
    int e = (int)(a >> 10) - 127 + 15;
    if (e >= 31)
        return sign | 0x7c00u; // past 65504: infinity
    return sign | ((uint32_t)e << 10) | (a & 0x3ffu);
}

__device__ __forceinline__ uint32_t float_to_bf16_bits(float f)
{
    uint32_t u = __float_as_uint(f);
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#ifdef REORDER_EXACT_INT
#define F16_OF(IN, v) int_to_float_bits<5, 10>(v)
#define BF16_OF(IN, v) int_to_float_bits<8, 7>(v)
#else
#define F16_OF(IN, v) float_to_f16_bits(__int2float_rn(v))
#define BF16_OF(IN, v) ((IN) < 32 ? float_to_bf16_bits(__int2float_rn(v)) : int_to_float_bits<8, 7>(v))
#endif

// Encodes sample j of a 16-byte output unit into o[4]. Samples of up to 16 bits are exact in
// float, so fp16 and bf16 take one rounding from there. int32 → fp16 may round in float first
// (|v| > 2^24) but every such value overflows fp16 to infinity either way; int32 → bf16 needs
// the integer rounding (float's rounding could create a tie that bf16 then rounds wrongly).
// Building with -DREORDER_EXACT_INT uses the integer rounding for every 16-bit output.
template <int IN, int OUT>
__device__ __forceinline__ void encode(uint32_t *o, int j, int32_t v)
{
    if (OUT == OUT_F16)
        o[j >> 1] |= F16_OF(IN, v) << ((j & 1) * 16);
    else if (OUT == OUT_BF16)
        o[j >> 1] |= BF16_OF(IN, v) << ((j & 1) * 16);
    else if (OUT == OUT_F32)
        o[j] = __float_as_uint(__int2float_rn(v));
    else if (OUT == OUT_I32)
        o[j] = (uint32_t)v;
    else {
        unsigned long long b = (unsigned long long)__double_as_longlong((double)v);
        o[2 * j] = (uint32_t)b;
        o[2 * j + 1] = (uint32_t)(b >> 32);
    }
}

// Converts one slot: the n_in payload bytes at s (whole samples) become samples 0..n_in*8/IN-1
// of the slot at d; the slot's remaining samples (up to in_len*8/IN) are zero. Each thread
// writes 16-byte output units, so stores are coalesced; the units' input is read in one
// aligned load where the payload's alignment allows.
template <int IN, int OUT>
__device__ __forceinline__ void convert_slot(const unsigned char *__restrict__ s, unsigned int n_in,
                                             unsigned char *__restrict__ d, unsigned int in_len, bool big)
{
    const int OB = out_bytes<OUT>::n;
    const int E = 16 / OB;        // samples per output unit
    const int IBU = E * IN / 8;   // input bytes per unit: 1..32
    const int W = IBU < 4 ? 1 : IBU / 4;
    unsigned int total = in_len * 8u / IN, present = n_in * 8u / IN;
    unsigned int units = total / E;
    bool in_aligned = (((uintptr_t)s) & (unsigned)((IBU < 16 ? IBU : 16) - 1)) == 0;
    bool out_aligned = (((uintptr_t)d) & 15u) == 0;
    for (unsigned int u = threadIdx.x; u < units; u += blockDim.x) {
        uint32_t o[4] = {0, 0, 0, 0};
        unsigned int e0 = u * E;
        if (e0 + E <= present) {
            uint32_t w[W];
            const unsigned char *p = s + (size_t)u * IBU;
            if (in_aligned) {
                if (IBU == 1)
                    w[0] = *p;
                else if (IBU == 2)
                    w[0] = *(const uint16_t *)p;
                else if (IBU == 4)
                    w[0] = *(const uint32_t *)p;
                else if (IBU == 8) {
                    uint2 x = *(const uint2 *)p;
                    w[0] = x.x;
                    w[1 % W] = x.y;
                } else {
#pragma unroll
                    for (int k = 0; k < W / 4; k++) {
                        uint4 x = ((const uint4 *)p)[k];
                        w[(4 * k) % W] = x.x;
                        w[(4 * k + 1) % W] = x.y;
                        w[(4 * k + 2) % W] = x.z;
                        w[(4 * k + 3) % W] = x.w;
                    }
                }
            } else {
#pragma unroll
                for (int k = 0; k < W; k++)
                    w[k] = 0;
#pragma unroll
                for (int k = 0; k < IBU; k++)
                    w[k >> 2] |= (uint32_t)p[k] << ((k & 3) * 8);
            }
#pragma unroll
            for (int j = 0; j < E; j++)
                encode<IN, OUT>(o, j, decode<IN>(w, j, big));
        } else {
#pragma unroll
            for (int j = 0; j < E; j++)
                encode<IN, OUT>(o, j, e0 + j < present ? decode_at<IN>(s, e0 + j, big) : 0);
        }
        if (out_aligned) {
            ((uint4 *)d)[u] = make_uint4(o[0], o[1], o[2], o[3]);
        } else {
            unsigned char *q = d + (size_t)u * 16u;
#pragma unroll
            for (int k = 0; k < 16; k++)
                q[k] = (unsigned char)(o[k >> 2] >> ((k & 3) * 8));
        }
    }
    // Samples after the last whole unit, one per thread.
    unsigned int e = units * E + threadIdx.x;
    if (e < total) {
        uint32_t o[4] = {0, 0, 0, 0};
        encode<IN, OUT>(o, 0, e < present ? decode_at<IN>(s, e, big) : 0);
        unsigned char *q = d + (size_t)e * OB;
        for (int k = 0; k < OB; k++)
            q[k] = (unsigned char)(o[k >> 2] >> ((k & 3) * 8));
    }
}

template <int IN, int OUT>
__device__ __forceinline__ void convert_kernel(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                               unsigned char *__restrict__ out, unsigned int in_len, unsigned int big,
                                               unsigned int nslots, unsigned int spb)
{
    __shared__ unsigned long long sh[MAX_SPB];
    unsigned int ns = slot_words(slots, nslots, spb, sh);
    unsigned int out_len = in_len * 8u / IN * out_bytes<OUT>::n;
    for (unsigned int k = 0; k < ns; k++) {
        unsigned long long w = sh[k];
        unsigned char *d = out + (size_t)(blockIdx.x * spb + k) * out_len;
        const unsigned char *s = src;
        unsigned int n = 0;
        if (w != SLOT_MISSING) {
            n = (unsigned int)(w & ((1ull << LEN_BITS) - 1));
            if (n > in_len)
                n = in_len;
            s = src + (w >> LEN_BITS);
        }
        convert_slot<IN, OUT>(s, n, d, in_len, big != 0);
    }
}

// reorder_cvt_<in>_<out>(slots, src, out, in_len, big, nslots, spb): in_len is the payload
// bytes per slot (whole samples); each output slot holds in_len*8/in_bits samples.
#define CVT(INNAME, IN, OUTNAME, OUT)                                                                                        \
    extern "C" __global__ void reorder_cvt_##INNAME##_##OUTNAME(const unsigned long long *__restrict__ slots,                \
                                                                const unsigned char *__restrict__ src,                       \
                                                                unsigned char *__restrict__ out, unsigned int in_len,        \
                                                                unsigned int big, unsigned int nslots, unsigned int spb)     \
    {                                                                                                                        \
        convert_kernel<IN, OUT>(slots, src, out, in_len, big, nslots, spb);                                                  \
    }

#define CVT_ALL(INNAME, IN)                                                                                                  \
    CVT(INNAME, IN, fp16, OUT_F16)                                                                                           \
    CVT(INNAME, IN, bf16, OUT_BF16)                                                                                          \
    CVT(INNAME, IN, fp32, OUT_F32)                                                                                           \
    CVT(INNAME, IN, fp64, OUT_F64)                                                                                           \
    CVT(INNAME, IN, int32, OUT_I32)

CVT_ALL(int4, 4)
CVT_ALL(int8, 8)
CVT_ALL(int16, 16)
CVT_ALL(int32, 32)
