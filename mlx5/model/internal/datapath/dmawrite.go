package datapath

// dmaWriter writes received frames into host RX buffers the way a NIC's DMA engine does:
// the bytes go to memory without the CPU first reading the destination's cache lines for
// ownership and without evicting the data the CPU is working on. The RX buffers a port
// cycles through are tens of MiB (every posted WQE's buffer), so the line a frame lands in
// is almost never cached; an ordinary copy stalled on a read of each line (the two-port
// run's CQE copy after it waited on them), which a DMA write never does.
//
// Contract: a streamed write (write of streamMin bytes or more, amd64) is weakly ordered —
// Intel SDM vol. 3A, "Memory Ordering in P6 and More Recent Processor Families": writes are
// not reordered with other writes except streaming stores executed with the non-temporal
// moves (MOVNTI, MOVNTDQ, ...), and SFENCE makes every store before it globally visible
// before any store after it. So its bytes may reach another CPU after a later ordinary store,
// such as the CQE that tells the driver they are there. publish issues that SFENCE; the CQ
// writer calls it before every CQE's owner byte (cq.go store), the one store that makes a
// completion visible, so no frame can be published unfenced whatever path wrote it, and the
// fence is paid once per Step's flush, not per frame. Within the writing thread the bytes
// read back as written (a processor sees its own stores in program order). A goroutine moved
// to another CPU between write and publish is no hazard: the move passes through the kernel
// or a locked instruction, each of which drains the write-combining buffers (SDM vol. 3A,
// "Buffering of Write Combining Memory Locations").
//
// Small copies (header-split header buffers, scatter pieces under streamMin) stay ordinary
// stores, as do other architectures, the purego build and race builds (Go's copy, which the
// race detector sees), where publish does nothing.
type dmaWriter struct {
	// streamed: a streamed write since the last publish.
	streamed bool
	// fences counts the fences publish issued (tests check that a Step pays one).
	fences uint64
}

// streamMin is the smallest write that streams. Below it a copy touches a few lines, and a
// partial line written by streaming stores leaves the write-combining buffer as several bus
// writes.
const streamMin = 256

// write copies src into dst (as copy does; dst and src do not overlap) and returns the bytes
// copied. Their visibility to other CPUs is ordered only by publish.
func (w *dmaWriter) write(dst, src []byte) int {
	k := min(len(dst), len(src))
	if !canStream || k < streamMin {
		return copy(dst, src)
	}
	copyStream(dst[:k], src[:k])
	w.streamed = true
	return k
}

// writeSum is write that also returns csum16(0, src[:k]) of the k bytes it wrote: on amd64
// with AVX2 a streamed write to a dst on a 32-byte boundary sums the bytes as it copies them
// (copyStreamSumAVX2), in the time the streaming stores take anyway; otherwise the bytes are
// summed after the write.
func (w *dmaWriter) writeSum(dst, src []byte) (int, uint32) {
	k := min(len(dst), len(src))
	if canStream && hasVecSum && k >= streamMin && k <= vecSumMax {
		if le, ok := copyStreamSumAVX2(dst[:k], src[:k]); ok {
			w.streamed = true
			return k, foldLE(uint64(le))
		}
	}
	w.write(dst, src)
	return k, csum16(0, src[:k])
}

// line writes the first k bytes of a 64-byte line into dst (at least k bytes): a whole line
// streamed (a full mini-CQE array of a compressed session: the slot's line is not read),
// fewer bytes copied.
func (w *dmaWriter) line(dst []byte, src *[64]byte, k int) {
	if !canStream || k < len(src) {
		copy(dst[:k], src[:k])
		return
	}
	copyStream(dst[:len(src)], src[:])
	w.streamed = true
}

// publish makes every write before it visible to other CPUs before any store after it: the
// SFENCE the streamed writes since the last publish need (nothing when there were none).
func (w *dmaWriter) publish() {
	if w.streamed {
		storeFence()
		w.streamed = false
		w.fences++
	}
}
