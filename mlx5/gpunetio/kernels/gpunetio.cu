// The ready kernels of package mlx5/gpunetio, built on daqiri_gpunetio.cuh. `make ptx`
// compiles this file with nvcc to gpunetio.ptx beside it (committed, embedded in the Go
// package; the driver JIT-compiles it at load).
//
//  - dqg_rx_persistent: one block per queue, resident until the CPU sets the stop word.
//    Thread 0 walks the CQ; the block copies each packet into the current batch (slots of
//    slot_bytes: a dqg_slot header of length, flow tag and timestamp, then the bytes), as the
//    reorder plans aggregate a flow's packets; a full batch goes to the CPU through the
//    semaphore ring, and the WQEs whose strides were all copied are re-posted.
//  - dqg_tx_stream: sends a GPU buffer as a stream of packets (npkts of pkt_size bytes each,
//    consecutive in the send buffer), by SEND WQEs or enhanced multi-packet WQEs of mpw
//    packets, a doorbell per burst, and waits for the last completion.
//  - dqg_bench_rx / dqg_bench_tx: the receive walk over pre-produced CQEs and the WQE build +
//    doorbell, GPU side alone (no NIC), one queue per block.
#include "daqiri_gpunetio.cuh"

#define DQG_ROUND 64 // packets taken per CQ walk of the receiver

extern "C" __global__ void dqg_rx_persistent(const dqg_queue *q, dqg_sem *sem, uint32_t sem_n, uint8_t *out,
                                             uint32_t batch_pkts, uint32_t slot_bytes, uint32_t stall_after) {
  __shared__ dqg_rx_state s;
  __shared__ dqg_pkt pk[DQG_ROUND];
  __shared__ int n, quit;
  __shared__ uint32_t filled, cur;
  __shared__ uint64_t seq, bbytes, first_ts;
  dqg_ctrl *c = (dqg_ctrl *)q->ctrl;
  volatile dqg_ctrl *vc = c;
  if (threadIdx.x == 0) {
    dqg_rx_init(q, &s);
    filled = cur = 0;
    seq = bbytes = first_ts = 0;
    quit = 0;
    vc->running = 1;
    if (!dqg_sem_wait_free(sem, 0, &vc->stop)) quit = 1;
  }
  __syncthreads();
  while (!quit) {
    if (threadIdx.x == 0) {
      n = 0;
      if (vc->stop) {
        quit = 1;
      } else if (stall_after != 0 && vc->packets >= stall_after) {
        // A kernel that stops polling (fault tests): no heartbeat, no CQ walk.
        __nanosleep(10000);
      } else {
        vc->heartbeat = vc->heartbeat + 1;
        int want = (int)min((uint32_t)DQG_ROUND, batch_pkts - filled);
        n = dqg_rx_poll(q, &s, pk, want);
        if (n < 0) {
          vc->err_synd = s.err_synd;
          vc->err_wqe = s.err_wqe;
          vc->err_op = s.err_op;
          vc->err = n == -1 ? DQG_ERR_RX_CQE : DQG_ERR_BAD_CQE;
          n = 0;
          quit = 1;
        } else if (n == 0) {
          __nanosleep(2000);
        }
      }
    }
    __syncthreads();
    int k = n;
    uint8_t *base = out + ((uint64_t)cur * batch_pkts + filled) * slot_bytes;
    for (int i = 0; i < k; i++) {
      uint8_t *dst = base + (uint64_t)i * slot_bytes;
      uint32_t len = min(pk[i].len, slot_bytes - DQG_SLOT_HEADER);
      const volatile uint8_t *src = (const volatile uint8_t *)pk[i].addr;
      for (uint32_t b = threadIdx.x; b < len; b += blockDim.x) dst[DQG_SLOT_HEADER + b] = src[b];
      if (threadIdx.x == 0) {
        ((uint32_t *)dst)[0] = pk[i].len;
        ((uint32_t *)dst)[1] = pk[i].tag;
        ((uint64_t *)dst)[1] = pk[i].ts;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0 && (k > 0 || (quit && filled > 0))) {
      uint64_t nb = 0;
      for (int i = 0; i < k; i++) nb += pk[i].len;
      if (filled == 0 && k > 0) first_ts = pk[0].ts;
      filled += k;
      bbytes += nb;
      // The packets are copied: their WQEs may be filled again.
      dqg_rx_repost(q, &s);
      vc->packets = vc->packets + k;
      vc->bytes = vc->bytes + nb;
      if (filled == batch_pkts || (quit && filled > 0)) {
        dqg_sem_publish(sem, cur, filled, bbytes, seq, first_ts);
        vc->batches = vc->batches + 1;
        seq++;
        cur = (cur + 1) % sem_n;
        filled = 0;
        bbytes = 0;
        if (!quit && !dqg_sem_wait_free(sem, cur, &vc->stop)) quit = 1;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    vc->rx_ci = s.ci;
    vc->rq_pi = s.pi;
    __threadfence_system();
    vc->exited = 1;
  }
}

extern "C" __global__ void dqg_tx_stream(const dqg_queue *q, uint32_t pkt_size, uint32_t npkts, uint32_t burst,
                                         uint32_t mpw) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  dqg_ctrl *c = (dqg_ctrl *)q->ctrl;
  volatile dqg_ctrl *vc = c;
  dqg_tx_state t;
  dqg_tx_init(&t);
  vc->running = 1;
  if (burst == 0) burst = 1;
  if (mpw > 61) mpw = 61;
  uint32_t sent = 0, last_pi = 0;
  uint64_t bytes = 0;
  bool failed = false;
  while (sent < npkts && !failed) {
    uint32_t end = min(npkts, sent + burst);
    while (sent < end) {
      uint32_t k = mpw > 1 ? min(mpw, end - sent) : 1;
      bool signal = sent + k == end;
      int r;
      uint32_t spin = 0;
      for (;;) {
        if (mpw > 1) {
          uint64_t addrs[61];
          uint32_t lens[61];
          for (uint32_t j = 0; j < k; j++) {
            addrs[j] = q->tx_buf + (uint64_t)(sent + j) * pkt_size;
            lens[j] = pkt_size;
          }
          r = dqg_tx_send_mpw(q, &t, addrs, lens, (int)k, signal);
        } else {
          r = dqg_tx_send(q, &t, q->tx_buf + (uint64_t)sent * pkt_size, pkt_size, signal);
        }
        if (r != -1) break;
        // No room: take completions (the doorbell for what is posted is already rung).
        if (dqg_tx_poll(q, &t) < 0) {
          failed = true;
          break;
        }
        if (vc->stop || ++spin > (1u << 26)) {
          if (!vc->stop) vc->err = DQG_ERR_TX_RING;
          failed = true;
          break;
        }
        __nanosleep(500);
      }
      if (failed) break;
      if (r == -2) { // a packet too small to send: stop with the count so far
        failed = true;
        break;
      }
      for (uint32_t j = 0; j < k; j++) bytes += pkt_size;
      sent += k;
    }
    if (t.pi != last_pi) {
      dqg_tx_ring(q, &t);
      last_pi = t.pi;
    }
    vc->heartbeat = vc->heartbeat + 1;
    vc->tx_pi = t.pi;
  }
  // The last completion: every signaled WQE done (bounded by the stop word).
  for (uint32_t spin = 0; !failed && t.ci != t.pi; spin++) {
    if (dqg_tx_poll(q, &t) < 0) failed = true;
    if (vc->stop || spin > (1u << 26)) break;
    __nanosleep(500);
  }
  if (t.err_op != 0) {
    vc->err_synd = t.err_synd;
    vc->err_wqe = t.err_wqe;
    vc->err_op = t.err_op;
    vc->err = DQG_ERR_TX_CQE;
  }
  vc->packets = sent;
  vc->bytes = bytes;
  vc->tx_pi = t.pi;
  vc->tx_ci = t.ci;
  __threadfence_system();
  vc->exited = 1;
}

// One block per queue descriptor qs[blockIdx.x], thread 0 walking a CQ of pre-produced
// completions (read-only: nothing written to the CQ), cqes of them (one lap). out[block] =
// packets seen, out[gridDim.x + block] = their bytes (so the walk is not optimised away).
extern "C" __global__ void dqg_bench_rx(const dqg_queue *qs, uint32_t cqes, unsigned long long *out) {
  if (threadIdx.x != 0) return;
  const dqg_queue *q = &qs[blockIdx.x];
  dqg_rx_state s;
  dqg_rx_init(q, &s);
  s.readonly = 1;
  dqg_pkt pk[32];
  unsigned long long pkts = 0, bytes = 0;
  for (uint32_t guard = 0; s.ci < cqes && guard < cqes; guard++) {
    int n = dqg_rx_poll(q, &s, pk, 32);
    if (n <= 0) break;
    for (int i = 0; i < n; i++) bytes += pk[i].len + (pk[i].addr & 1);
    pkts += n;
  }
  out[blockIdx.x] = pkts;
  out[gridDim.x + blockIdx.x] = bytes;
}

// One block per queue descriptor qs[blockIdx.x]: thread 0 builds n SEND WQEs (or eMPW WQEs of
// mpw packets) of pkt_size into its SQ ring and rings the doorbell every burst; completions
// are not awaited (no NIC): the ring is reused by resetting the counters it checks.
extern "C" __global__ void dqg_bench_tx(const dqg_queue *qs, uint32_t n, uint32_t pkt_size, uint32_t burst,
                                        uint32_t mpw, unsigned long long *out) {
  if (threadIdx.x != 0) return;
  const dqg_queue *q = &qs[blockIdx.x];
  dqg_tx_state t;
  dqg_tx_init(&t);
  uint64_t addrs[61];
  uint32_t lens[61];
  uint32_t done = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t k = mpw > 1 ? min(min(mpw, 61u), n - i) : 1;
    bool signal = ((i + k) % burst) == 0;
    t.ci = t.pi;            // no NIC: every block counts as completed
    t.sig_head = t.sig_tail;
    int r;
    if (k > 1) {
      for (uint32_t j = 0; j < k; j++) {
        addrs[j] = q->tx_buf + (uint64_t)((i + j) % 64) * pkt_size;
        lens[j] = pkt_size;
      }
      r = dqg_tx_send_mpw(q, &t, addrs, lens, (int)k, signal);
    } else {
      r = dqg_tx_send(q, &t, q->tx_buf + (uint64_t)(i % 64) * pkt_size, pkt_size, signal);
    }
    if (r != 0) break;
    i += k;
    done = i;
    if (signal || i == n) dqg_tx_ring(q, &t);
  }
  out[blockIdx.x] = done;
}
