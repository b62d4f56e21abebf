package datapath

import "testing"

// BenchmarkReceive measures a frame through RX steering (one catch-all entry), a direct
// TIR, a cyclic RQ and its CQE, with the driver side reposting and polling.
func BenchmarkReceive(b *testing.B) {
	e := newEnv(b)
	c := e.newCQ(10, nil)
	r := e.newRQ(c, 10, 2048, 0, 0)
	r.post(1 << 10)
	e.direct(r)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64-42, 0)
	b.SetBytes(int64(len(f)))
	for i := 0; i < b.N; i++ {
		e.nic.Receive(f)
		e.nic.Step(1)
		if i%256 == 255 {
			r.post(len(c.poll()))
		}
	}
}

// BenchmarkSend measures one 64-byte SEND WQE (inline headers, no CQE) onto a cable.
func BenchmarkSend(b *testing.B) {
	a, z := newEnv(b), newEnv(b)
	Cable(a.nic, z.nic)
	cq := a.newCQ(10, nil)
	s := a.newSQ(cq, 10, nil)
	f := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 64-42, 0)
	w := (&wqe{opcode: 0x0a}).eth(0, f)
	b.SetBytes(int64(len(f)))
	for i := 0; i < b.N; i++ {
		s.doorbell(s.post(w))
		a.nic.Step(1)
		z.nic.inMu.Lock()
		z.nic.spare = append(z.nic.spare, z.nic.inbox...)
		z.nic.inbox = z.nic.inbox[:0]
		z.nic.inMu.Unlock()
	}
}
