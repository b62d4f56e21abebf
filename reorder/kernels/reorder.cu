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

// Output stores: st.global.cs (streaming, evict first), so that an aggregate — read later by
// another kernel, if at all, and for widening conversions larger than the packets — does not
// push the packets still to be read out of L2. On an H200 at 1 KiB × 16384 (16 MiB of
// packets) this took int16 → fp32 from 0.67 to 0.79 of a device copy's traffic and the copy
// from 0.86 to 0.90; -DREORDER_PLAIN_STORES builds plain stores.
#ifndef REORDER_PLAIN_STORES
#define ST(p, v) __stcs((p), (v))
#else
#define ST(p, v) (*(p) = (v))
#endif


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
        ST(&d4[i], make_uint4(0, 0, 0, 0));
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
            ST(&d4[i], a);
            ST(&d4[i + nt], b);
            ST(&d4[i + 2u * nt], c);
            ST(&d4[i + 3u * nt], e);
        }
        for (; i < body; i += nt)
            ST(&d4[i], s4[i]);
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
__device__ __forceinline__ void copy_kernel(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
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

// The slot table by value, in the kernel's parameters (the _p kernels), for aggregates of up
// to PARAM_SLOTS slots: the launch carries the table to the GPU, so a block's first read is
// not a round trip to memory — over PCIe for a table in mapped host memory, which at small
// aggregates was most of the kernel's time. Parameters past 4 KiB need CUDA 12.1 or newer on
// a Volta or newer GPU; __grid_constant__ lets threads index the table where it lies instead
// of each taking a copy.
#define PARAM_SLOTS 1024
struct slot_table {
    unsigned long long w[PARAM_SLOTS];
};

// reorder_copy(slots, src, out, slot_len, nslots, spb): slots in GPU-readable memory.
extern "C" __global__ void reorder_copy(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                        unsigned char *__restrict__ out, unsigned int slot_len, unsigned int nslots,
                                        unsigned int spb)
{
    copy_kernel(slots, src, out, slot_len, nslots, spb);
}

// reorder_copy_p(table, src, out, slot_len, nslots, spb): nslots ≤ PARAM_SLOTS.
extern "C" __global__ void reorder_copy_p(const __grid_constant__ slot_table tbl, const unsigned char *__restrict__ src,
                                          unsigned char *__restrict__ out, unsigned int slot_len, unsigned int nslots,
                                          unsigned int spb)
{
    copy_kernel(tbl.w, src, out, slot_len, nslots, spb);
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

// ---- Conversion kernels ---------------------------------------------------------------------
//
// A block converts its slots as one flat list of output units of 16 bytes, slot-major:
// thread t takes units t, t+nt, t+2nt, ..., R at a time, loading the
// input of all R before converting and storing any, so each thread keeps several independent
// loads in flight, and a warp's loads and stores are contiguous even where slots are small
// (several slots are worked on at once; no thread idles while a short slot finishes). The
// narrow inputs convert without int → float instructions: byte permutes put each
// (sign-flipped) sample into the fraction of an fp16 or fp32 holding 2^k + sample + bias, and
// one exact subtraction of 2^k + bias leaves the sample (fp16 two lanes at a time); results
// that need rounding (int16 → fp16/bf16) round the exact fp32 value once, ties to even.
// int32 → fp16/bf16 take one int → float conversion (and bf16 one back) per sample.

// Per-slot facts for the block's threads: the payload's byte offset in the source region and
// how many of its bytes hold whole samples (0 for a slot no packet filled). Reads this block's
// slot words (first = blockIdx.x*spb, at most spb, none past nslots) in one round trip;
// returns how many.
template <int IN>
__device__ __forceinline__ unsigned int slot_info(const unsigned long long *__restrict__ slots, unsigned int nslots,
                                                  unsigned int spb, unsigned int in_len, unsigned long long *so,
                                                  unsigned int *sn)
{
    unsigned int first = blockIdx.x * spb;
    unsigned int n = nslots - first < spb ? nslots - first : spb;
    if (threadIdx.x < n) {
        unsigned long long w = slots[first + threadIdx.x], off = 0;
        unsigned int len = 0;
        if (w != SLOT_MISSING) {
            len = (unsigned int)(w & ((1ull << LEN_BITS) - 1));
            if (len > in_len)
                len = in_len;
            len = len * 8u / IN * IN / 8u;
            off = w >> LEN_BITS;
        }
        so[threadIdx.x] = off;
        sn[threadIdx.x] = len;
    }
    __syncthreads();
    return n;
}

// Loads the IBU input bytes of one output unit at p into w (little-endian words) where all
// are present (avail == IBU): vector loads where p is aligned to min(IBU, 16), else aligned
// 32-bit words joined by funnel shifts (every word read holds a byte of the unit, so none
// lies outside the payload's allocation). A unit the payload ends in (0 < avail < IBU) is
// read byte by byte; its missing bytes, and a whole missing unit's, are zero.
template <int IBU, int W>
__device__ __forceinline__ void load_unit(uint32_t *w, const unsigned char *__restrict__ p, unsigned int avail)
{
    uintptr_t a = (uintptr_t)p;
    if (avail == IBU) {
        if constexpr (IBU == 1) {
            w[0] = *p;
        } else if constexpr (IBU == 2) {
            if ((a & 1u) == 0)
                w[0] = *(const uint16_t *)p;
            else
                w[0] = (uint32_t)p[0] | ((uint32_t)p[1] << 8);
        } else {
            const unsigned int AL = IBU < 16 ? IBU : 16;
            if ((a & (AL - 1u)) == 0) {
                if constexpr (IBU == 4) {
                    w[0] = *(const uint32_t *)p;
                } else if constexpr (IBU == 8) {
                    uint2 x = *(const uint2 *)p;
                    w[0] = x.x;
                    w[1] = x.y;
                } else {
#pragma unroll
                    for (int k = 0; k < W / 4; k++) {
                        uint4 x = ((const uint4 *)p)[k];
                        w[4 * k] = x.x;
                        w[4 * k + 1] = x.y;
                        w[4 * k + 2] = x.z;
                        w[4 * k + 3] = x.w;
                    }
                }
            } else {
                const uint32_t *q = (const uint32_t *)(p - (a & 3u));
                unsigned int sh = (unsigned int)(a & 3u) * 8u;
                uint32_t x[W + 1];
#pragma unroll
                for (int k = 0; k < W; k++)
                    x[k] = q[k];
                x[W] = sh ? q[W] : 0u;
#pragma unroll
                for (int k = 0; k < W; k++)
                    w[k] = __funnelshift_r(x[k], x[k + 1], sh);
            }
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < W; k++)
        w[k] = 0;
#pragma unroll
    for (int k = 0; k < IBU; k++)
        if ((unsigned int)k < avail)
            w[k >> 2] |= (uint32_t)p[k] << ((k & 3) * 8);
}

// Stores a UB-byte unit (16 or 8) from o at q with the widest stores q's alignment allows.
template <int UB>
__device__ __forceinline__ void store_unit(unsigned char *q, const uint32_t *o)
{
    uintptr_t a = (uintptr_t)q;
    if (UB == 16 && (a & 15u) == 0) {
        ST((uint4 *)q, make_uint4(o[0], o[1], o[2], o[3]));
    } else if ((a & 7u) == 0) {
#pragma unroll
        for (int k = 0; k < UB / 8; k++)
            ST(&((uint2 *)q)[k], make_uint2(o[2 * k], o[2 * k + 1]));
    } else if ((a & 3u) == 0) {
#pragma unroll
        for (int k = 0; k < UB / 4; k++)
            ST(&((unsigned int *)q)[k], (unsigned int)o[k]);
    } else if ((a & 1u) == 0) {
#pragma unroll
        for (int k = 0; k < UB / 2; k++)
            ((uint16_t *)q)[k] = (uint16_t)(o[k >> 1] >> ((k & 1) * 16));
    } else {
#pragma unroll
        for (int k = 0; k < UB; k++)
            q[k] = (unsigned char)(o[k >> 2] >> ((k & 3) * 8));
    }
}

#ifndef __CUDA_ARCH__
uint32_t reorder_host_hsub2(uint32_t a, uint32_t b); // host builds (kernel logic tests off the GPU)
#endif

// a - b on two fp16 lanes (sub.f16x2, round to nearest; used only where the result is exact).
__device__ __forceinline__ uint32_t hsub2(uint32_t a, uint32_t b)
{
    uint32_t d;
#ifdef __CUDA_ARCH__
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
    d = reorder_host_hsub2(a, b);
#endif
    return d;
}

// The fp32 bits of x - m, where bits x is a float 2^23 + u (u < 2^23 in its fraction) and m
// = 2^23 + bias: the sample u - bias, exactly.
__device__ __forceinline__ uint32_t f32_unbias(uint32_t x, float m)
{
    return __float_as_uint(__fsub_rn(__uint_as_float(x), m));
}

#define F32_2P23 0x4b000000u // byte 4 of __byte_perm(x, F32_2P23, s) is 0x00, byte 7 is 0x4b

// The bits of a float holding an integer exactly, rounded to bf16 (nearest, ties to even) in
// the upper 16 bits.
__device__ __forceinline__ uint32_t bf16_round(uint32_t u) { return u + 0x7fffu + ((u >> 16) & 1u); }

// int32 → bf16 (nearest, ties to even, directly from the integer) in the upper 16 bits (the
// lower 16 are not part of the result): v truncated to float (exact below 2^24), with the
// lowest bit set where the truncation dropped bits (the back-conversion differs from v), is v
// rounded to odd at 24 bits; that keeps more than two bits beyond bf16's 8, so its one
// rounding to nearest even gives the same bf16 as rounding v itself.
__device__ __forceinline__ uint32_t i32_bf16_hi(int32_t v)
{
    float f = __int2float_rz(v);
    return bf16_round(__float_as_uint(f) | (uint32_t)(__float2int_rz(f) != v));
}

// int32 → fp16 (nearest, ties to even; past 65504, infinity). |v| is clamped to 65520 (from
// there up everything rounds to infinity), so its float is exact; times 2^-112 rebiases the
// exponent from 127 to 15 (exact, |v| ≥ 1 stays normal, 0 stays 0) and the fraction rounds
// to 10 bits with a carry into the exponent, 65520 reaching 0x7c00.
__device__ __forceinline__ uint32_t i32_f16(int32_t v)
{
    uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    a = a < 65520u ? a : 65520u;
    uint32_t u = __float_as_uint(__fmul_rn(__uint2float_rn(a), 0x1p-112f));
    return ((u + 0xfffu + ((u >> 13) & 1u)) >> 13) | (((uint32_t)v >> 16) & 0x8000u);
}

// The work item of a conversion: UB = 16 output bytes holding E samples from IBU input bytes
// (convert_kernel's R below no longer applies to the widening conversions — int4 → fp16/bf16,
// int8 → fp32/int32, int16 → fp64 among them — which run wide_kernel with WIDE_R).
// (1..32), W input words; R items in flight per thread: 8 for 4-byte inputs (int4 →
// fp16/bf16, int8 → fp32/int32, int16 → fp64), faster on an H100 (-DREORDER_R4=n sets
// theirs); 2 for the 8-byte inputs (int16 → fp32, int8 → fp16/bf16, int32 → fp64) with
// registers capped at 32 so that every thread slot of a multiprocessor is used (on an H200 at
// 1 KiB × 16384 their 4096 blocks then run in one wave instead of 1.24: 0.84 → 0.90–0.92 of
// the copy's traffic; more in flight under that cap spills); 2 for the 32-byte inputs of
// int32 → fp16/bf16 (two 16-byte loads per item already; on an H100 at 8 KiB × 4096 this
// beat 8-byte items with 4 in flight by 0.03–0.06 of the copy's traffic); 4 for the rest,
// where 8 cost occupancy (int4 → fp32 with a mapped slot table). Building with
// -DREORDER_IN_FLIGHT=n sets n for all.
template <int IN, int OUT> struct unit {
    static const int OB = out_bytes<OUT>::n;
    static const int UB = 16;
    static const int E = UB / OB;
    static const int IBU = E * IN / 8;
    static const int W = IBU < 4 ? 1 : IBU / 4;
#ifdef REORDER_R4
    static const int R4 = REORDER_R4; // items in flight for 4-byte inputs
#else
    static const int R4 = 8;
#endif
#ifdef REORDER_IN_FLIGHT
    static const int R = REORDER_IN_FLIGHT;
#else
    static const int R = IBU == 4 ? R4 : (IBU == 8 ? 2 : (IBU == 32 ? 2 : 4));
#endif
    // Blocks of 256 threads (or four times as many of 64) that must fit on a multiprocessor
    // at once, which caps the registers: 8 (32 registers, every thread slot of a Hopper
    // multiprocessor) for 8-byte inputs with 2 items in flight.
    static const int MINB = (IBU == 8 || (IBU == 4 && R4 <= 4)) ? 8 : 1;
};

// Converts the E samples of one output unit from its input words w into o (UB/4 words).
template <int IN, int OUT>
__device__ __forceinline__ void convert_unit(const uint32_t *w, uint32_t *o, bool big)
{
    const int E = unit<IN, OUT>::E;
    if constexpr (IN == 4 && OUT == OUT_F16) {
        // Byte k of x (sign-flipped nibbles u = v+8) gives word k: fp16 1024+u_hi | 1024+u_lo
        // << 16, then minus 1032 in each lane.
        uint32_t x = w[0] ^ 0x88888888u, y = x >> 4;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint32_t h = (__byte_perm(y, x, (uint32_t)(k | k << 4 | (4 + k) << 8 | (4 + k) << 12)) & 0x000f000fu) | 0x64006400u;
            o[k] = hsub2(h, 0x64086408u);
        }
    } else if constexpr (IN == 4 && (OUT == OUT_BF16 || OUT == OUT_F32 || OUT == OUT_I32)) {
        // hi/lo: the sign-flipped high and low nibbles of each byte, in that byte.
        uint32_t x = w[0] ^ 0x88888888u;
        uint32_t lo = x & 0x0f0f0f0fu, hi = (x >> 4) & 0x0f0f0f0fu;
        if constexpr (OUT == OUT_BF16) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                uint32_t a = f32_unbias(__byte_perm(hi, F32_2P23, 0x7440u | k), 8388616.0f);
                uint32_t b = f32_unbias(__byte_perm(lo, F32_2P23, 0x7440u | k), 8388616.0f);
                o[k] = __byte_perm(a, b, 0x7632); // exact: the low 16 bits are zero
            }
        } else if constexpr (OUT == OUT_F32) {
#pragma unroll
            for (int k = 0; k < 2; k++) {
                o[2 * k] = f32_unbias(__byte_perm(hi, F32_2P23, 0x7440u | k), 8388616.0f);
                o[2 * k + 1] = f32_unbias(__byte_perm(lo, F32_2P23, 0x7440u | k), 8388616.0f);
            }
        } else {
#pragma unroll
            for (int k = 0; k < 2; k++) {
                o[2 * k] = __byte_perm(hi, 0u, 0x4440u | k) - 8u;
                o[2 * k + 1] = __byte_perm(lo, 0u, 0x4440u | k) - 8u;
            }
        }
    } else if constexpr (IN == 8 && OUT == OUT_F16) {
        // fp16 1024+u (u = v+128) is 0x64 in the high byte and u in the low byte.
#pragma unroll
        for (int i = 0; i < 2; i++) {
            uint32_t x = w[i] ^ 0x80808080u;
            o[2 * i] = hsub2(__byte_perm(x, 0x64646464u, 0x4140), 0x64806480u);
            o[2 * i + 1] = hsub2(__byte_perm(x, 0x64646464u, 0x4342), 0x64806480u);
        }
    } else if constexpr (IN == 8 && OUT == OUT_BF16) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            uint32_t x = w[i] ^ 0x80808080u;
#pragma unroll
            for (int k = 0; k < 2; k++) {
                uint32_t a = f32_unbias(__byte_perm(x, F32_2P23, 0x7440u | (2 * k)), 8388736.0f);
                uint32_t b = f32_unbias(__byte_perm(x, F32_2P23, 0x7440u | (2 * k + 1)), 8388736.0f);
                o[2 * i + k] = __byte_perm(a, b, 0x7632); // exact: the low 16 bits are zero
            }
        }
    } else if constexpr (IN == 8 && OUT == OUT_F32) {
        uint32_t x = w[0] ^ 0x80808080u;
#pragma unroll
        for (int k = 0; k < 4; k++)
            o[k] = f32_unbias(__byte_perm(x, F32_2P23, 0x7440u | k), 8388736.0f);
    } else if constexpr (IN == 8 && OUT == OUT_I32) {
#pragma unroll
        for (int k = 0; k < 4; k++)
            o[k] = __byte_perm(w[0] ^ 0x80808080u, 0u, 0x4440u | k) - 128u;
    } else if constexpr (IN == 16 && (OUT == OUT_F16 || OUT == OUT_BF16 || OUT == OUT_F32)) {
        // Each sample's two bytes (sign bit flipped: u = v+32768) become the low 16 bits of the
        // fraction of 2^23 + u.
        const uint32_t flip = big ? 0x00800080u : 0x80008000u;
        const uint32_t s0 = big ? 0x7401u : 0x7410u, s1 = big ? 0x7423u : 0x7432u;
#pragma unroll
        for (int i = 0; i < E / 2; i++) {
            uint32_t x = w[i] ^ flip;
            uint32_t a = f32_unbias(__byte_perm(x, F32_2P23, s0), 8421376.0f);
            uint32_t b = f32_unbias(__byte_perm(x, F32_2P23, s1), 8421376.0f);
            if constexpr (OUT == OUT_F32) {
                o[2 * i] = a;
                o[2 * i + 1] = b;
            } else if constexpr (OUT == OUT_BF16) {
                o[i] = __byte_perm(bf16_round(a), bf16_round(b), 0x7632);
            } else {
                o[i] = float_to_f16_bits(__uint_as_float(a)) | (float_to_f16_bits(__uint_as_float(b)) << 16);
            }
        }
    } else if constexpr (IN == 32 && (OUT == OUT_F16 || OUT == OUT_BF16)) {
#pragma unroll
        for (int i = 0; i < E / 2; i++) {
            uint32_t a = w[2 * i], b = w[2 * i + 1];
            if (big) {
                a = __byte_perm(a, 0, 0x0123);
                b = __byte_perm(b, 0, 0x0123);
            }
            if constexpr (OUT == OUT_BF16)
                o[i] = __byte_perm(i32_bf16_hi((int32_t)a), i32_bf16_hi((int32_t)b), 0x7632);
            else
                o[i] = __byte_perm(i32_f16((int32_t)a), i32_f16((int32_t)b), 0x5410);
        }
    } else {
#pragma unroll
        for (int j = 0; j < E; j++)
            encode<IN, OUT>(o, j, decode<IN>(w, j, big));
    }
}

// Converts this block's slots: slot k's payload (sn[k] bytes of whole samples at src + so[k])
// becomes its in_len*8/IN samples, zero past the payload.
template <int IN, int OUT>
__device__ __forceinline__ void convert_kernel(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                               unsigned char *__restrict__ out, unsigned int in_len, unsigned int big,
                                               unsigned int nslots, unsigned int spb)
{
    const int OB = unit<IN, OUT>::OB, UB = unit<IN, OUT>::UB, E = unit<IN, OUT>::E;
    const int IBU = unit<IN, OUT>::IBU, W = unit<IN, OUT>::W, R = unit<IN, OUT>::R;
    __shared__ unsigned long long so[MAX_SPB];
    __shared__ unsigned int sn[MAX_SPB];
    unsigned int ns = slot_info<IN>(slots, nslots, spb, in_len, so, sn);
    const bool bg = big != 0;
    unsigned int total = in_len * 8u / IN; // samples per slot
    unsigned int units = total / E;        // whole units per slot
    unsigned int out_len = total * OB;
    unsigned char *base = out + (size_t)(blockIdx.x * spb) * out_len;
    unsigned int t = threadIdx.x, nt = blockDim.x;
    if (units > 0) {
        unsigned int items = ns * units;
        // (k, u): slot and unit of this thread's next item; a step of nt items is qk slots and
        // qu units.
        unsigned int k = t / units, u = t - k * units;
        unsigned int qk = nt / units, qu = nt - qk * units;
        for (unsigned int i = t; i < items; i += R * nt) {
            uint32_t w[R][W];
            unsigned char *q[R];
            unsigned int av[R];
#pragma unroll
            for (int r = 0; r < R; r++) {
                av[r] = 0;
                q[r] = base;
                if (i + r * nt < items) {
                    unsigned int off = u * IBU, n = sn[k];
                    av[r] = n > off ? (n - off < IBU ? n - off : IBU) : 0u;
                    q[r] = base + (size_t)k * out_len + (size_t)u * UB;
                    load_unit<IBU, W>(w[r], src + so[k] + off, av[r]);
                }
                u += qu;
                k += qk;
                if (u >= units) {
                    u -= units;
                    k++;
                }
            }
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (i + r * nt < items) {
                    uint32_t o[4] = {0, 0, 0, 0};
                    if (av[r] != 0)
                        convert_unit<IN, OUT>(w[r], o, bg);
                    store_unit<UB>(q[r], o);
                }
            }
        }
    }
    // Samples after each slot's last whole unit (fewer than E per slot), one per thread.
    unsigned int tail = total - units * E;
    if (tail != 0) {
        for (unsigned int i = t; i < ns * tail; i += nt) {
            unsigned int k = i / tail;
            unsigned int e = units * E + (i - k * tail);
            unsigned int present = sn[k] * 8u / IN;
            uint32_t o[4] = {0, 0, 0, 0};
            encode<IN, OUT>(o, 0, e < present ? decode_at<IN>(src + so[k], e, bg) : 0);
            unsigned char *q = base + (size_t)k * out_len + (size_t)e * OB;
            for (int b = 0; b < OB; b++)
                q[b] = (unsigned char)(o[b >> 2] >> ((b & 3) * 8));
        }
    }
}

// ---- Widening kernels (output 4× its input or more) -----------------------------------------
//
// int4 → fp16/bf16/fp32/fp64/int32, int8 → fp32/fp64/int32 and int16 → fp64 write 4–16 bytes
// for every input byte, so they are bound by writing the aggregate. convert_kernel's blocks
// each made one pass over a few slots after a round trip for their slot words and a barrier;
// at 1 KiB × 16384 on an H200 that reached 1.3–1.4× the time of a memset of the same output.
// Here each warp takes whole slots, reading its own slot word (the next one is loaded while the
// current slot is converted), with no barrier and no shared slot table; a grid smaller than
// one warp per slot has each warp walk the slots a grid apart. A warp converts a slot in
// chunks of 32·WIDE_R output units, lane l taking units l, l+32, ...: each store instruction of
// the warp writes 512 contiguous bytes (st.global.cs). With WIDE_V = 1 a chunk's input is read
// with 16-byte loads into shared memory and each lane picks its units' bytes from there
// (fewer, wider loads in flight); WIDE_L sets the blocks of WIDE_THREADS threads that must fit
// on a multiprocessor (a register cap). On an H200 at 1 KiB × 16384 (bench/reorder/gpu
// -variants: R 4/8/16 × V 0/1 × L 4/8 × 128/256 threads × grids of 2–8 blocks per
// multiprocessor or one warp per slot) R = 16, V = 1, L = 4 with 128-thread blocks, one warp per
// slot, had the best worst case over int4 → fp16/bf16/fp32, int8 → fp32 and int16 → fp64:
// 0.71–0.74 of a device copy's traffic against 0.67–0.71 before (1.25–1.31× a memset of the
// output). R = 8 was 0.75 for the 4-byte-input units but 0.71 for int4 → fp32 (2 bytes per
// unit); capped grids and L = 8 (32 registers) were slower.
#ifndef WIDE_R
#define WIDE_R 16
#endif
#ifndef WIDE_V
#define WIDE_V 1
#endif
#ifndef WIDE_L
#define WIDE_L 4
#endif
// WIDE_EV: L2 eviction hints of wide_kernel's aligned 16-byte input loads and output stores
// (createpolicy + .L2::cache_hint, PTX ISA 7.4, sm_80 and later; a compute_75 build ignores
// them, `make ptx` builds both). 0: none (plain loads, st.global.cs); 1: loads evict_last,
// st.global.cs; 2: loads evict_last, stores evict_first; 3: plain loads, stores evict_first;
// 4: loads evict_last and L1::no_allocate, st.global.cs.
#ifndef WIDE_EV
#define WIDE_EV 0
#endif
#define WIDE_THREADS 256

// The L2 policies of one WIDE_EV mode, created once per thread.
template <int EV> struct l2hint {
    unsigned long long in, out;
    __device__ __forceinline__ l2hint()
    {
        in = out = 0;
#if __CUDA_ARCH__ >= 800
        if constexpr (EV == 1 || EV == 2 || EV == 4)
            asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(in));
        if constexpr (EV == 2 || EV == 3)
            asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(out));
#endif
    }
    __device__ __forceinline__ uint4 ld(const uint4 *p) const
    {
#if __CUDA_ARCH__ >= 800
        uint4 x;
        if constexpr (EV == 1 || EV == 2) {
            asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                         : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                         : "l"(p), "l"(in));
            return x;
        } else if constexpr (EV == 4) {
            asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                         : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                         : "l"(p), "l"(in));
            return x;
        }
#endif
        return *p;
    }
    __device__ __forceinline__ void st(uint4 *p, uint4 v) const
    {
#if __CUDA_ARCH__ >= 800
        if constexpr (EV == 2 || EV == 3) {
            asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                         :
                         : "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(out)
                         : "memory");
            return;
        }
#endif
        ST(p, v);
    }
};

template <int IN, int OUT> struct widening {
    static const bool yes = unit<IN, OUT>::IBU <= 4 && out_bytes<OUT>::n * 8 >= 4 * IN;
};

template <int IN, int OUT, int R, int V, int EV>
__device__ __forceinline__ void wide_kernel(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                            unsigned char *__restrict__ out, unsigned int in_len, unsigned int big,
                                            unsigned int nslots)
{
    const int OB = unit<IN, OUT>::OB, UB = unit<IN, OUT>::UB, E = unit<IN, OUT>::E;
    const int IBU = unit<IN, OUT>::IBU, W = unit<IN, OUT>::W;
    // Shared staging only where a chunk's input is whole 16-byte words (R·IBU a multiple of 16).
    const bool stage = V == 1 && (R * IBU) % 16 == 0;
    const int SW = stage ? 32 * R * IBU / 4 : 1; // staging words per warp
    __shared__ __align__(16) uint32_t stg[(WIDE_THREADS / 32) * SW];
    const unsigned int lane = threadIdx.x & 31u, wpb = blockDim.x >> 5;
    const unsigned int nw = gridDim.x * wpb;
    uint32_t *sw = stg + (threadIdx.x >> 5) * SW;
    const bool bg = big != 0;
    unsigned int total = in_len * 8u / IN; // samples per slot
    unsigned int units = total / E;        // whole units per slot
    unsigned int out_len = total * OB;
    const l2hint<EV> hint;
    unsigned int k = blockIdx.x * wpb + (threadIdx.x >> 5);
    unsigned long long next = k < nslots ? slots[k] : SLOT_MISSING;
    for (; k < nslots; k += nw) {
        unsigned long long w = next;
        if (k + nw < nslots)
            next = slots[k + nw];
        unsigned int n = 0;
        const unsigned char *s = src;
        if (w != SLOT_MISSING) {
            n = (unsigned int)(w & ((1ull << LEN_BITS) - 1));
            if (n > in_len)
                n = in_len;
            n = n * 8u / IN * IN / 8u;
            s = src + (w >> LEN_BITS);
        }
        unsigned char *d = out + (size_t)k * out_len;
        for (unsigned int c = 0; c < units; c += 32u * R) {
            uint32_t wv[R][W];
            unsigned int av[R];
            if (stage && c + 32u * R <= units && (c + 32u * R) * IBU <= n && (((uintptr_t)(s + c * IBU)) & 15u) == 0) {
                if constexpr (stage) {
                    const uint4 *g = (const uint4 *)(s + c * IBU);
                    uint4 x[R * IBU / 16];
#pragma unroll
                    for (int j = 0; j < R * IBU / 16; j++)
                        x[j] = EV == 0 ? g[lane + 32 * j] : hint.ld(g + lane + 32 * j);
#pragma unroll
                    for (int j = 0; j < R * IBU / 16; j++)
                        ((uint4 *)sw)[lane + 32 * j] = x[j];
                    __syncwarp();
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        unsigned int u = lane + 32u * r;
                        av[r] = IBU;
                        if constexpr (IBU == 4)
                            wv[r][0] = sw[u];
                        else if constexpr (IBU == 2)
                            wv[r][0] = ((const uint16_t *)sw)[u];
                        else
                            wv[r][0] = ((const unsigned char *)sw)[u];
                    }
                    __syncwarp();
                }
            } else {
#pragma unroll
                for (int r = 0; r < R; r++) {
                    unsigned int u = c + lane + 32u * r, off = u * IBU;
                    av[r] = u < units && n > off ? (n - off < IBU ? n - off : IBU) : 0u;
                    if (u < units)
                        load_unit<IBU, W>(wv[r], s + off, av[r]);
                }
            }
#pragma unroll
            for (int r = 0; r < R; r++) {
                unsigned int u = c + lane + 32u * r;
                if (u < units) {
                    uint32_t o[4] = {0, 0, 0, 0};
                    if (av[r] != 0)
                        convert_unit<IN, OUT>(wv[r], o, bg);
                    unsigned char *q = d + (size_t)u * UB;
                    if constexpr (EV == 2 || EV == 3) {
                        if (UB == 16 && (((uintptr_t)q) & 15u) == 0)
                            hint.st((uint4 *)q, make_uint4(o[0], o[1], o[2], o[3]));
                        else
                            store_unit<UB>(q, o);
                    } else {
                        store_unit<UB>(q, o);
                    }
                }
            }
        }
        // Samples after the slot's last whole unit (fewer than E).
        for (unsigned int e = units * E + lane; e < total; e += 32u) {
            uint32_t o[4] = {0, 0, 0, 0};
            encode<IN, OUT>(o, 0, e < n * 8u / IN ? decode_at<IN>(s, e, bg) : 0);
            unsigned char *q = d + (size_t)e * OB;
            for (int b = 0; b < OB; b++)
                q[b] = (unsigned char)(o[b >> 2] >> ((b & 3) * 8));
        }
    }
}

// The kernel of conversion (IN, OUT): wide_kernel for the widening ones (spb unused: the grid
// walks all slots), convert_kernel for the rest.
template <int IN, int OUT>
__device__ __forceinline__ void cvt_kernel(const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src,
                                           unsigned char *__restrict__ out, unsigned int in_len, unsigned int big,
                                           unsigned int nslots, unsigned int spb)
{
    if constexpr (widening<IN, OUT>::yes)
        wide_kernel<IN, OUT, WIDE_R, WIDE_V, WIDE_EV>(slots, src, out, in_len, big, nslots);
    else
        convert_kernel<IN, OUT>(slots, src, out, in_len, big, nslots, spb);
}

template <int IN, int OUT> struct bounds {
    static const int threads = widening<IN, OUT>::yes ? WIDE_THREADS : 256;
    static const int minb = widening<IN, OUT>::yes ? WIDE_L : unit<IN, OUT>::MINB;
};

#ifdef REORDER_VARIANTS
// Variants for bench/reorder/gpu -variants: reorder_w<R>v1l4e<EV>_<in>_<out>(slots, src, out,
// in_len, big, nslots, spb), slot table in memory, for R 8 and 16 and the WIDE_EV modes whose
// bit is set in VARIANT_EVS (default all; a mode ptxas refuses can be left out).
#ifndef VARIANT_EVS
#define VARIANT_EVS 31
#endif
#define WV(INNAME, IN, OUTNAME, OUT, R, EV)                                                                                \
    extern "C" __global__ void __launch_bounds__(WIDE_THREADS, 4) reorder_w##R##v1l4e##EV##_##INNAME##_##OUTNAME(         \
        const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src, unsigned char *__restrict__ out, \
        unsigned int in_len, unsigned int big, unsigned int nslots, unsigned int spb)                                      \
    {                                                                                                                      \
        wide_kernel<IN, OUT, R, 1, EV>(slots, src, out, in_len, big, nslots);                                              \
    }
#define WV_R(INNAME, IN, OUTNAME, OUT, EV) WV(INNAME, IN, OUTNAME, OUT, 8, EV) WV(INNAME, IN, OUTNAME, OUT, 16, EV)
#define WV_EV(EV)                                                                                                          \
    WV_R(int4, 4, fp16, OUT_F16, EV)                                                                                       \
    WV_R(int4, 4, bf16, OUT_BF16, EV)                                                                                      \
    WV_R(int4, 4, fp32, OUT_F32, EV)                                                                                       \
    WV_R(int8, 8, fp32, OUT_F32, EV)                                                                                       \
    WV_R(int16, 16, fp64, OUT_F64, EV)
#if VARIANT_EVS & 1
WV_EV(0)
#endif
#if VARIANT_EVS & 2
WV_EV(1)
#endif
#if VARIANT_EVS & 4
WV_EV(2)
#endif
#if VARIANT_EVS & 8
WV_EV(3)
#endif
#if VARIANT_EVS & 16
WV_EV(4)
#endif
#endif

// reorder_cvt_<in>_<out>(slots, src, out, in_len, big, nslots, spb): in_len is the payload
// bytes per slot (whole samples); each output slot holds in_len*8/in_bits samples.
// reorder_cvt_<in>_<out>_p takes the slot table by value (nslots ≤ PARAM_SLOTS).
#define CVT(INNAME, IN, OUTNAME, OUT)                                                                                        \
    extern "C" __global__ void __launch_bounds__((bounds<IN, OUT>::threads), (bounds<IN, OUT>::minb)) reorder_cvt_##INNAME##_##OUTNAME( \
        const unsigned long long *__restrict__ slots, const unsigned char *__restrict__ src, unsigned char *__restrict__ out,   \
        unsigned int in_len, unsigned int big, unsigned int nslots, unsigned int spb)                                        \
    {                                                                                                                        \
        cvt_kernel<IN, OUT>(slots, src, out, in_len, big, nslots, spb);                                                      \
    }                                                                                                                        \
    extern "C" __global__ void __launch_bounds__((bounds<IN, OUT>::threads), (bounds<IN, OUT>::minb)) reorder_cvt_##INNAME##_##OUTNAME##_p( \
        const __grid_constant__ slot_table tbl, const unsigned char *__restrict__ src, unsigned char *__restrict__ out,         \
        unsigned int in_len, unsigned int big, unsigned int nslots, unsigned int spb)                                        \
    {                                                                                                                        \
        cvt_kernel<IN, OUT>(tbl.w, src, out, in_len, big, nslots, spb);                                                      \
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
