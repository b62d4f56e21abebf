// daqiri_gpunetio.cuh: CUDA device functions that drive ConnectX (mlx5) queues from a kernel,
// DOCA GPUNetIO's model without DOCA. The CPU (Go package mlx5/gpunetio) creates the queues,
// posts the striding RQ's WQEs and writes a struct dqg_queue describing them in memory the GPU
// reaches; kernels then receive, re-post, send and ring doorbells with the functions below.
//
// Facts used, and where they come from (the Go side's mlx5/prm package holds the same values,
// each checked against rdma-core's mlx5dv.h or the kernel's device.h by its layout test):
//  - CQE (rdma-core mlx5dv.h struct mlx5_cqe64): wqe_id at byte 2 (striding RQ WQE index),
//    byte_cnt at 44, timestamp at 48, sop_drop_qpn at 56 (flow tag in the low 24 bits on
//    receive), wqe_counter at 60 (striding RQ: the first stride's index; send: the WQE's
//    index), op_own at 63: opcode in bits 7:4 (MLX5_CQE_REQ 0, RESP_SEND 2, REQ_ERR 13,
//    RESP_ERR 14, INVALID 15), format in 3:2 (3: compressed), owner in bit 0, which software
//    owns when it equals bit log2(size) of its consumer index (rdma-core cq.c get_sw_cqe).
//  - Error CQE (mlx5dv.h struct mlx5_err_cqe): vendor_err_synd at 54, syndrome at 55.
//  - Striding RQ byte_cnt (mlx5dv.h MLX5_MPRQ_*): length in bits 15:0, strides consumed in
//    29:16, filler flag in bit 31 (a completion that only consumes the rest of a WQE).
//  - Compressed sessions, basic layout (kernel en_rx.c mlx5e_decompress_cqes_start; DPDK
//    mlx5_rx.c): the title CQE's byte_cnt is the number of CQEs in the session; 8-byte
//    mini-CQEs (device.h struct mlx5_mini_cqe8) follow, eight per 64-byte slot, the first
//    array in the slot after the title and every eighth slot after it; in the
//    checksum+stride-index format the stride index is at mini byte 2 and byte_cnt at 4.
//    Consumed slots are invalidated (opcode 15) so a stale owner bit does not look valid a lap
//    later, as the mlx5 engine's rx.go does.
//  - Doorbell records (mlx5dv.h MLX5_RCV_DBR 0, MLX5_SND_DBR 1; rdma-core mlx5.h
//    MLX5_CQ_SET_CI 0): big-endian 32-bit words; RQ and SQ counters 16 bits, CQ ci 24 bits.
//  - Send WQE (mlx5dv.h struct mlx5_wqe_ctrl_seg, mlx5_wqe_eth_seg, mlx5_wqe_data_seg):
//    64-byte basic blocks of 16-byte units; control: opmod_idx_opcode (opcode SEND 0x0a,
//    ENHANCED_MPSW 0x29, index = producer counter), qpn_ds (SQ number << 8 | units),
//    fm_ce_se at byte 11 (8 = MLX5_WQE_CTRL_CQ_UPDATE asks for a CQE); Ethernet segment with
//    inline_hdr_sz at 12 and inline_hdr_start at 14 (18 header bytes inline, DPDK
//    MLX5_ESEG_MIN_INLINE_SIZE); data segment byte_count, lkey, addr, big-endian.
//  - Doorbell order (rdma-core qp.c post_send_db; NVSHMEM IBGDA ibgda_ring_db): WQEs, then a
//    barrier (udma_to_device_barrier) and the doorbell record, then a barrier (mmio_wc_start)
//    and the control segment's first 8 bytes to the UAR's BlueFlame register. On the GPU the
//    barriers are __threadfence_system() and the record store is st.release.sys, as IBGDA
//    writes them. The UAR must be mapped into the GPU (IBGDA: cuMemHostRegister with
//    CU_MEMHOSTREGISTER_IOMEMORY over the UAR mmap); with the device model q->uar is a shadow
//    word in host memory that the CPU forwards (see the Go package's doc).
//
// Everything here is per thread unless the name ends in _warp or _block; those take the same
// state in shared memory and let one lane do the serial CQ walk while the others wait.
#pragma once
#include <stdint.h>

// ---- shared layouts (mlx5/gpunetio/desc.go; TestHeaderLayout compares the numbers) ----
#define DQG_DESC_SIZE 192
#define DQG_CTRL_SIZE 128
#define DQG_SEM_SIZE 32
#define DQG_SLOT_HEADER 16
#define DQG_FLAG_COMPRESSED 1
#define DQG_FLAG_RX 2
#define DQG_FLAG_TX 4
#define DQG_ERR_RX_CQE 1
#define DQG_ERR_TX_CQE 2
#define DQG_ERR_BAD_CQE 3
#define DQG_ERR_TX_RING 4
#define DQG_ERR_SEM_STUCK 5
#define DQG_SEM_FREE 0
#define DQG_SEM_READY 1

struct dqg_queue {
  uint32_t magic, version;          // 0, 4
  uint64_t rx_cq, rx_cq_dbr;        // 8, 16
  uint64_t rq, rq_dbr, rx_buf;      // 24, 32, 40
  uint32_t rx_cq_log, rq_log;       // 48, 52
  uint32_t stride_log, strides_log; // 56, 60
  uint32_t rx_lkey, flags;          // 64, 68
  uint64_t tx_cq, tx_cq_dbr;        // 72, 80
  uint64_t sq, sq_dbr, uar, tx_buf; // 88, 96, 104, 112
  uint32_t tx_cq_log, sq_log;       // 120, 124
  uint32_t sqn, tx_lkey;            // 128, 132
  uint64_t ctrl;                    // 136
  uint32_t tx_buf_size, rx_buf_size; // 144, 148
  uint8_t pad[DQG_DESC_SIZE - 152];
};

struct dqg_ctrl {
  uint32_t stop, heartbeat, exited, err;       // 0, 4, 8, 12
  uint32_t err_synd, err_wqe, err_op, running; // 16, 20, 24, 28
  uint64_t packets, bytes;                     // 32, 40
  uint32_t rx_ci, rq_pi, tx_pi, tx_ci;         // 48, 52, 56, 60
  uint64_t uar, batches;                       // 64, 72
  uint8_t pad[DQG_CTRL_SIZE - 80];
};

struct dqg_sem {
  uint32_t status, count; // 0, 4
  uint64_t bytes, seq, ts; // 8, 16, 24
};

static_assert(sizeof(dqg_queue) == DQG_DESC_SIZE, "dqg_queue size");
static_assert(__builtin_offsetof(dqg_queue, rx_lkey) == 64, "dqg_queue rx_lkey");
static_assert(__builtin_offsetof(dqg_queue, ctrl) == 136, "dqg_queue ctrl");
static_assert(__builtin_offsetof(dqg_queue, tx_buf_size) == 144, "dqg_queue tx_buf_size");
static_assert(sizeof(dqg_ctrl) == DQG_CTRL_SIZE, "dqg_ctrl size");
static_assert(__builtin_offsetof(dqg_ctrl, uar) == 64, "dqg_ctrl uar");
static_assert(sizeof(dqg_sem) == DQG_SEM_SIZE, "dqg_sem size");

// A received packet: its address in the strides, length, flow tag and CQE timestamp.
struct dqg_pkt {
  uint64_t addr;
  uint32_t len, tag;
  uint64_t ts;
};

// Receive state of one queue (one thread owns it, or a block's shared memory).
struct dqg_rx_state {
  uint32_t ci;        // CQ consumer index
  uint32_t pi;        // RQ WQEs posted (the doorbell record's counter)
  uint32_t wq_ci;     // RQ WQEs whose strides are all consumed
  uint32_t used;      // strides consumed of WQE wq_ci
  uint32_t readonly;  // benchmarks: leave the CQ and doorbell records untouched
  // A compressed session being read: its title's fields and how far.
  uint32_t sess_cnt, sess_k;
  uint32_t t_tag, t_wqe_id;
  uint64_t t_ts;
  // The error CQE that stopped the queue.
  uint32_t err_synd, err_wqe, err_op;
};

// Send state.
struct dqg_tx_state {
  uint32_t pi;        // basic blocks posted
  uint32_t ci;        // basic blocks completed
  uint32_t cq_ci;     // TX CQ consumer index
  uint32_t sig_head, sig_tail;
  uint32_t sig_end[32]; // end (in basic blocks) of each signaled WQE, in order
  uint64_t last_ctrl;   // the last WQE's first 8 bytes (for the doorbell)
  uint32_t err_synd, err_wqe, err_op;
};

// ---- memory access ----
__device__ __forceinline__ uint32_t dqg_bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }
__device__ __forceinline__ uint16_t dqg_bswap16(uint32_t x) { return (uint16_t)(((x & 0xff) << 8) | ((x >> 8) & 0xff)); }

__device__ __forceinline__ uint32_t dqg_ld32(uint64_t a) { return *(const volatile uint32_t *)a; }
__device__ __forceinline__ uint8_t dqg_ld8(uint64_t a) { return *(const volatile uint8_t *)a; }
__device__ __forceinline__ void dqg_st32(uint64_t a, uint32_t v) { *(volatile uint32_t *)a = v; }
__device__ __forceinline__ void dqg_st8(uint64_t a, uint8_t v) { *(volatile uint8_t *)a = v; }

// Acquire load at system scope: the CQE's other fields are read after its owner byte
// (rdma-core cq.c: udma_from_device_barrier after the ownership check).
__device__ __forceinline__ uint32_t dqg_ld_acquire32(uint64_t a) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}

// Release store at system scope: everything before (WQEs, the consumer's reads) is visible
// to the NIC before the doorbell record (IBGDA's st.release.sys of the DBR).
__device__ __forceinline__ void dqg_st_release32(uint64_t a, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}

__device__ __forceinline__ void dqg_st64(uint64_t a, uint64_t v) { *(volatile uint64_t *)a = v; }

// ---- receive ----

// The last 4 bytes of CQE i (wqe_counter, signature, op_own), loaded with acquire.
__device__ __forceinline__ uint32_t dqg_cqe_tail(uint64_t cq, uint32_t log, uint32_t i) {
  return dqg_ld_acquire32(cq + ((uint64_t)(i & ((1u << log) - 1)) << 6) + 60);
}

// Whether software owns a CQE whose op_own is op at consumer index ci.
__device__ __forceinline__ bool dqg_cqe_owned(uint8_t op, uint32_t ci, uint32_t log) {
  return (op >> 4) != 15 && (uint32_t)(op & 1) == ((ci >> log) & 1);
}

// Initialises receive state for a queue whose WQEs the CPU posted (all of them).
__device__ __forceinline__ void dqg_rx_init(const dqg_queue *q, dqg_rx_state *s) {
  s->ci = 0;
  s->pi = 1u << q->rq_log;
  s->wq_ci = 0;
  s->used = 0;
  s->readonly = 0;
  s->sess_cnt = s->sess_k = 0;
  s->err_synd = s->err_wqe = s->err_op = 0;
}

// Accounts one completion's strides and, unless it is a filler, returns its packet.
__device__ __forceinline__ bool dqg_rx_stride(const dqg_queue *q, dqg_rx_state *s, uint32_t bc,
                                              uint32_t wqe_id, uint32_t stride, uint32_t tag,
                                              uint64_t ts, dqg_pkt *p) {
  uint32_t n = (bc & 0x3fff0000u) >> 16;
  if (n == 0) n = 1;
  s->used += n;
  uint32_t spw = 1u << q->strides_log;
  if (s->used >= spw) {
    s->wq_ci++;
    s->used -= spw;
  }
  if (bc & 0x80000000u) return false; // filler
  uint64_t idx = ((uint64_t)(wqe_id & ((1u << q->rq_log) - 1)) << q->strides_log) + stride;
  p->addr = q->rx_buf + (idx << q->stride_log);
  p->len = bc & 0xffff;
  p->tag = tag;
  p->ts = ts;
  return true;
}

// Polls the RX CQ for up to max packets (per thread): plain CQEs and compressed sessions, a
// session possibly across calls. Returns the number of packets written to pkts, or -1 when
// an error CQE stopped the queue (s->err_*). The CQ doorbell record is updated; the strides
// stay the caller's until dqg_rx_repost.
__device__ int dqg_rx_poll(const dqg_queue *q, dqg_rx_state *s, dqg_pkt *pkts, int max) {
  const uint32_t log = q->rx_cq_log;
  const uint64_t cq = q->rx_cq;
  const uint32_t mask = (1u << log) - 1;
  int n = 0;
  uint32_t start_ci = s->ci;
  // Bounded: at most the CQ's size of completions per call.
  for (uint32_t guard = 0; n < max && guard <= mask; guard++) {
    if (s->sess_cnt != 0) {
      // The next mini-CQE of the session being read.
      uint32_t k = s->sess_k;
      uint32_t at = k < 8 ? s->ci + 1 : s->ci + 8 * (k / 8);
      uint64_t m = cq + ((uint64_t)(at & mask) << 6) + (k % 8) * 8;
      uint32_t w0 = dqg_ld32(m), w1 = dqg_ld32(m + 4);
      uint32_t stride = dqg_bswap16(w0 >> 16);
      uint32_t bc = dqg_bswap32(w1);
      if (dqg_rx_stride(q, s, bc, s->t_wqe_id, stride, s->t_tag, s->t_ts, &pkts[n])) n++;
      if (++s->sess_k == s->sess_cnt) {
        if (!s->readonly)
          for (uint32_t j = 0; j < s->sess_cnt; j++)
            dqg_st8(cq + ((uint64_t)((s->ci + j) & mask) << 6) + 63, 0xf0);
        s->ci += s->sess_cnt;
        s->sess_cnt = s->sess_k = 0;
      }
      continue;
    }
    uint32_t tail = dqg_cqe_tail(cq, log, s->ci);
    uint8_t op = tail >> 24;
    if (!dqg_cqe_owned(op, s->ci, log)) break;
    uint64_t e = cq + ((uint64_t)(s->ci & mask) << 6);
    uint8_t opcode = op >> 4;
    if (opcode == 13 || opcode == 14) {
      uint32_t w = dqg_ld32(e + 52);
      s->err_synd = (w >> 24) | ((w >> 16) & 0xff) << 8;
      s->err_wqe = dqg_bswap16(tail);
      s->err_op = opcode;
      return -1;
    }
    if (opcode != 2) {
      s->err_op = opcode;
      s->err_wqe = dqg_bswap16(tail);
      s->err_synd = 0;
      return -2;
    }
    uint32_t bc = dqg_bswap32(dqg_ld32(e + 44));
    uint32_t tag = dqg_bswap32(dqg_ld32(e + 56)) & 0xffffff;
    uint64_t ts = ((uint64_t)dqg_bswap32(dqg_ld32(e + 48)) << 32) | dqg_bswap32(dqg_ld32(e + 52));
    uint32_t wqe_id = dqg_bswap16(dqg_ld32(e) >> 16);
    if (((op >> 2) & 3) == 3) {
      // A session's title: bc counts its CQEs; the minis come next.
      s->sess_cnt = bc;
      s->sess_k = 0;
      s->t_tag = tag;
      s->t_ts = ts;
      s->t_wqe_id = wqe_id;
      if (bc == 0) { // malformed: skip the title alone
        s->ci++;
      }
      continue;
    }
    if (dqg_rx_stride(q, s, bc, wqe_id, dqg_bswap16(tail), tag, ts, &pkts[n])) n++;
    if (!s->readonly) dqg_st8(e + 63, 0xf0);
    s->ci++;
  }
  if (s->ci != start_ci && !s->readonly) {
    // The invalidated slots before the consumer index that hands them back (DPDK mlx5_rx.c:
    // rte_io_wmb before the CQ doorbell record).
    __threadfence_system();
    dqg_st32(q->rx_cq_dbr, dqg_bswap32(s->ci & 0xffffff));
  }
  return n;
}

// Re-posts the WQEs whose strides were all consumed, once the caller is done with their
// packets: WQE slot i always owns the same strides, so re-posting is the counter alone.
__device__ __forceinline__ void dqg_rx_repost(const dqg_queue *q, dqg_rx_state *s) {
  uint32_t want = s->wq_ci + (1u << q->rq_log);
  if (want == s->pi || s->readonly) return;
  s->pi = want;
  // The reads of the strides before the NIC may write them again (rdma-core qp.c
  // mlx5_post_wq_recv: udma_to_device_barrier before the record).
  __threadfence_system();
  dqg_st_release32(q->rq_dbr, dqg_bswap32(s->pi & 0xffff));
}

// Warp-wide receive: lane 0 walks the CQ (the walk is serial: ownership, sessions), then
// every lane gets the count; pkts and s are in shared memory.
__device__ int dqg_rx_poll_warp(const dqg_queue *q, dqg_rx_state *s, dqg_pkt *pkts, int max) {
  int n = 0;
  if ((threadIdx.x & 31) == 0) n = dqg_rx_poll(q, s, pkts, max);
  __syncwarp();
  return __shfl_sync(0xffffffffu, n, 0);
}

// Block-wide receive: thread 0 walks, every thread gets the count (all threads must call).
__device__ int dqg_rx_poll_block(const dqg_queue *q, dqg_rx_state *s, dqg_pkt *pkts, int max) {
  __shared__ int n;
  if (threadIdx.x == 0) n = dqg_rx_poll(q, s, pkts, max);
  __syncthreads();
  int r = n;
  __syncthreads();
  return r;
}

// ---- send ----

__device__ __forceinline__ void dqg_tx_init(dqg_tx_state *t) {
  t->pi = t->ci = t->cq_ci = 0;
  t->sig_head = t->sig_tail = 0;
  t->last_ctrl = 0;
  t->err_synd = t->err_wqe = t->err_op = 0;
}

// Address of 16-byte unit u of the WQE starting at basic block start.
__device__ __forceinline__ uint64_t dqg_sq_unit(const dqg_queue *q, uint32_t start, uint32_t u) {
  uint32_t bb = (start + u / 4) & ((1u << q->sq_log) - 1);
  return q->sq + ((uint64_t)bb << 6) + (u % 4) * 16;
}

__device__ __forceinline__ void dqg_st128(uint64_t a, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  // Plain store: the fences before the doorbell record order it for the NIC.
  *(uint4 *)a = make_uint4(x, y, z, w);
}

// Writes the control segment; returns its first 8 bytes as they lie in memory.
__device__ __forceinline__ uint64_t dqg_ctrl_seg(const dqg_queue *q, uint32_t start, uint32_t opcode,
                                                 uint32_t ds, bool signal) {
  uint32_t w0 = dqg_bswap32(((start & 0xffff) << 8) | opcode);
  uint32_t w1 = dqg_bswap32((q->sqn << 8) | ds);
  uint32_t w2 = signal ? (8u << 24) : 0; // fm_ce_se, byte 11: MLX5_WQE_CTRL_CQ_UPDATE
  dqg_st128(dqg_sq_unit(q, start, 0), w0, w1, w2, 0);
  return (uint64_t)w0 | ((uint64_t)w1 << 32);
}

__device__ __forceinline__ void dqg_data_seg(uint64_t a, uint32_t len, uint32_t lkey, uint64_t addr) {
  dqg_st128(a, dqg_bswap32(len), dqg_bswap32(lkey), dqg_bswap32((uint32_t)(addr >> 32)), dqg_bswap32((uint32_t)addr));
}

// Room for bbs more basic blocks and, when signaling, a completion to remember.
__device__ __forceinline__ bool dqg_tx_room(const dqg_queue *q, const dqg_tx_state *t, uint32_t bbs, bool signal) {
  if (signal && t->sig_tail - t->sig_head >= 32) return false;
  return t->pi - t->ci + bbs <= (1u << q->sq_log);
}

// Builds a SEND WQE for len bytes at addr (in the send buffer, key q->tx_lkey): 18 header
// bytes inline, the rest by pointer. Returns 0, -1 without room (poll completions), -2 for
// a packet of 18 bytes or less.
__device__ int dqg_tx_send(const dqg_queue *q, dqg_tx_state *t, uint64_t addr, uint32_t len, bool signal) {
  if (len <= 18) return -2;
  if (!dqg_tx_room(q, t, 1, signal)) return -1;
  uint32_t start = t->pi;
  uint8_t h[18];
  for (int i = 0; i < 18; i++) h[i] = dqg_ld8(addr + i);
  // Ethernet segment: inline_hdr_sz = 18 (bytes 12-13, big-endian), the first two header
  // bytes in inline_hdr_start (14-15), the other sixteen in the next unit.
  uint32_t e3 = (18u << 8) | ((uint32_t)h[0] << 16) | ((uint32_t)h[1] << 24);
  dqg_st128(dqg_sq_unit(q, start, 1), 0, 0, 0, e3);
  uint32_t v[4];
  for (int i = 0; i < 4; i++)
    v[i] = h[2 + 4 * i] | (uint32_t)h[3 + 4 * i] << 8 | (uint32_t)h[4 + 4 * i] << 16 | (uint32_t)h[5 + 4 * i] << 24;
  dqg_st128(dqg_sq_unit(q, start, 2), v[0], v[1], v[2], v[3]);
  dqg_data_seg(dqg_sq_unit(q, start, 3), len - 18, q->tx_lkey, addr + 18);
  t->last_ctrl = dqg_ctrl_seg(q, start, 0x0a, 4, signal);
  t->pi += 1;
  if (signal) t->sig_end[t->sig_tail++ % 32] = t->pi;
  return 0;
}

// Builds an enhanced multi-packet send WQE (DPDK mlx5_tx.h mlx5_tx_burst_empw_simple): a
// control segment, an Ethernet segment without inline data and one data segment per packet
// (k from 1 to 61). Returns 0, -1 without room, -2 for a bad k.
__device__ int dqg_tx_send_mpw(const dqg_queue *q, dqg_tx_state *t, const uint64_t *addrs, const uint32_t *lens,
                               int k, bool signal) {
  if (k < 1 || k > 61) return -2;
  uint32_t ds = 2 + k, bbs = (ds * 16 + 63) / 64;
  if (!dqg_tx_room(q, t, bbs, signal)) return -1;
  uint32_t start = t->pi;
  dqg_st128(dqg_sq_unit(q, start, 1), 0, 0, 0, 0);
  for (int j = 0; j < k; j++) dqg_data_seg(dqg_sq_unit(q, start, 2 + j), lens[j], q->tx_lkey, addrs[j]);
  t->last_ctrl = dqg_ctrl_seg(q, start, 0x29, ds, signal);
  t->pi += bbs;
  if (signal) t->sig_end[t->sig_tail++ % 32] = t->pi;
  return 0;
}

// Rings the doorbell for everything posted: the doorbell record (MLX5_SND_DBR, word 1), then
// the last WQE's control segment's first 8 bytes to the UAR (q->uar: the BlueFlame register
// mapped into the GPU, or the model's shadow word).
__device__ __forceinline__ void dqg_tx_ring(const dqg_queue *q, dqg_tx_state *t) {
  __threadfence_system();                                   // udma_to_device_barrier: WQEs first
  dqg_st_release32(q->sq_dbr + 4, dqg_bswap32(t->pi & 0xffff));
  __threadfence_system();                                   // mmio_wc_start: the record before the UAR
  dqg_st64(q->uar, t->last_ctrl);
  __threadfence_system();                                   // mmio_flush_writes
}

// Polls the TX CQ: each CQE completes the oldest signaled WQE still open. Returns the CQEs
// read, or -1 on an error CQE (t->err_*).
__device__ int dqg_tx_poll(const dqg_queue *q, dqg_tx_state *t) {
  const uint32_t log = q->tx_cq_log, mask = (1u << log) - 1;
  int n = 0;
  for (uint32_t guard = 0; guard <= mask; guard++) {
    uint32_t tail = dqg_cqe_tail(q->tx_cq, log, t->cq_ci);
    uint8_t op = tail >> 24;
    if (!dqg_cqe_owned(op, t->cq_ci, log)) break;
    uint64_t e = q->tx_cq + ((uint64_t)(t->cq_ci & mask) << 6);
    uint8_t opcode = op >> 4;
    if (opcode == 13 || opcode == 14) {
      uint32_t w = dqg_ld32(e + 52);
      t->err_synd = (w >> 24) | ((w >> 16) & 0xff) << 8;
      t->err_wqe = dqg_bswap16(tail);
      t->err_op = opcode;
      return -1;
    }
    if (t->sig_head != t->sig_tail) t->ci = t->sig_end[t->sig_head++ % 32];
    dqg_st8(e + 63, 0xf0);
    t->cq_ci++;
    n++;
  }
  if (n > 0) {
    __threadfence_system();
    dqg_st32(q->tx_cq_dbr, dqg_bswap32(t->cq_ci & 0xffffff));
  }
  return n;
}

// ---- semaphore ring: batches handed to the CPU or the next kernel ----

// Waits until entry i is free; false if *stop became set first.
__device__ bool dqg_sem_wait_free(dqg_sem *sem, uint32_t i, const volatile uint32_t *stop) {
  uint64_t a = (uint64_t)&sem[i].status;
  while (dqg_ld_acquire32(a) != DQG_SEM_FREE) {
    if (*stop) return false;
    __nanosleep(1000);
  }
  return true;
}

// Publishes entry i: the batch's bytes (written before the call) and fields, then the status
// with release semantics.
__device__ void dqg_sem_publish(dqg_sem *sem, uint32_t i, uint32_t count, uint64_t bytes, uint64_t seq, uint64_t ts) {
  volatile dqg_sem *e = &sem[i];
  e->count = count;
  e->bytes = bytes;
  e->seq = seq;
  e->ts = ts;
  __threadfence_system();
  dqg_st_release32((uint64_t)&sem[i].status, DQG_SEM_READY);
}
