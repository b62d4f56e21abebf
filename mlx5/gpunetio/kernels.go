package gpunetio

import (
	_ "embed"
	"fmt"

	"github.com/daqiri-go/daqiri/cudart"
)

// kernelPTX is kernels/gpunetio.cu compiled by `make ptx` (nvcc, compute_75; mk/gpu.mk).
//
//go:embed kernels/gpunetio.ptx
var kernelPTX []byte

// Kernels are the ready kernels loaded on one GPU.
type Kernels struct {
	mod          *cudart.Module
	rx, tx       *cudart.Function
	benchRx      *cudart.Function
	benchTx      *cudart.Function
	blockThreads int
}

// LoadKernels loads the kernels on dev: ptx, or the embedded kernels/gpunetio.ptx when nil.
func LoadKernels(dev *cudart.Device, ptx []byte) (*Kernels, error) {
	if ptx == nil {
		ptx = kernelPTX
	}
	m, err := dev.LoadModule(ptx)
	if err != nil {
		return nil, fmt.Errorf("gpunetio: loading GPU kernels: %w", err)
	}
	k := &Kernels{mod: m, blockThreads: 256}
	for _, f := range []struct {
		p    **cudart.Function
		name string
	}{{&k.rx, "dqg_rx_persistent"}, {&k.tx, "dqg_tx_stream"}, {&k.benchRx, "dqg_bench_rx"}, {&k.benchTx, "dqg_bench_tx"}} {
		if *f.p, err = m.Function(f.name); err != nil {
			m.Close()
			return nil, fmt.Errorf("gpunetio: %w", err)
		}
	}
	return k, nil
}

// Close unloads the kernels.
func (k *Kernels) Close() error { return k.mod.Close() }

// LaunchReceiver starts the persistent receiver on s: one block that stays until q.Stop.
// Batches of batchPkts packets go to out (sem.Len() batches of batchPkts slots of
// slotBytes, GPU memory) and are announced on sem. stallAfter > 0 makes the kernel stop
// polling after that many packets (fault tests).
func (k *Kernels) LaunchReceiver(s *cudart.Stream, q *Queue, sem *SemRing, out uint64, batchPkts, slotBytes, stallAfter uint32) error {
	if batchPkts == 0 || slotBytes <= SlotHeader || slotBytes%8 != 0 {
		return fmt.Errorf("gpunetio: receiver batch of %d slots of %d bytes (slots are 8-byte multiples above %d)", batchPkts, slotBytes, SlotHeader)
	}
	if q.cfg.NoRx {
		return fmt.Errorf("gpunetio: the queue has no receive side")
	}
	return k.rx.Launch(cudart.LaunchConfig{Grid: cudart.Dim3{X: 1}, Block: cudart.Dim3{X: uint32(k.blockThreads)}, Stream: s},
		cudart.U64(q.Descriptor()), cudart.U64(sem.Addr()), cudart.U32(uint32(sem.Len())), cudart.U64(out),
		cudart.U32(batchPkts), cudart.U32(slotBytes), cudart.U32(stallAfter))
}

// LaunchTransmitter sends npkts packets of pktSize bytes, consecutive from the start of the
// queue's send buffer, ringing the doorbell every burst packets; mpw > 1 packs that many
// packets per enhanced multi-packet WQE.
func (k *Kernels) LaunchTransmitter(s *cudart.Stream, q *Queue, pktSize, npkts, burst, mpw uint32) error {
	if q.txBuf == nil {
		return fmt.Errorf("gpunetio: the queue has no send side (tx_buf_size 0)")
	}
	if uint64(pktSize)*uint64(npkts) > uint64(q.txBuf.Size()) || pktSize <= 18 {
		return fmt.Errorf("gpunetio: %d packets of %d bytes: the send buffer has %d bytes (and packets need more than 18)", npkts, pktSize, q.txBuf.Size())
	}
	return k.tx.Launch(cudart.LaunchConfig{Grid: cudart.Dim3{X: 1}, Block: cudart.Dim3{X: 32}, Stream: s},
		cudart.U64(q.Descriptor()), cudart.U32(pktSize), cudart.U32(npkts), cudart.U32(burst), cudart.U32(mpw))
}

// BenchRx launches the receive benchmark: blocks blocks, block b walking the CQ of the
// descriptor at descs + b*DescSize (cqes pre-produced completions); out gets 2*blocks
// counters.
func (k *Kernels) BenchRx(s *cudart.Stream, descs uint64, blocks int, cqes uint32, out uint64) error {
	return k.benchRx.Launch(cudart.LaunchConfig{Grid: cudart.Dim3{X: uint32(blocks)}, Block: cudart.Dim3{X: 32}, Stream: s},
		cudart.U64(descs), cudart.U32(cqes), cudart.U64(out))
}

// BenchTx launches the send benchmark: n WQEs per block of pktSize-byte packets, a doorbell
// every burst packets, mpw packets per WQE (1: SEND).
func (k *Kernels) BenchTx(s *cudart.Stream, descs uint64, blocks int, n, pktSize, burst, mpw uint32, out uint64) error {
	return k.benchTx.Launch(cudart.LaunchConfig{Grid: cudart.Dim3{X: uint32(blocks)}, Block: cudart.Dim3{X: 32}, Stream: s},
		cudart.U64(descs), cudart.U32(n), cudart.U32(pktSize), cudart.U32(burst), cudart.U32(mpw), cudart.U64(out))
}
