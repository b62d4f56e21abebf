package datapath

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// env is a port's surroundings in a test: host memory mapped at IOVAs, one memory key that
// covers all of it (lkey testLKey, address = IOVA), an event recorder and a manual clock.
type env struct {
	t     testing.TB
	space *dma.Space
	next  uint64
	ev    *events
	clock *ManualClock
	nic   *NIC
	ids   uint32
	// rqMod, when set, changes the parameters of the RQs newRQ makes.
	rqMod func(*RQParams)
}

const testLKey = 0x1234

type keys struct{ s *dma.Space }

func (k keys) Translate(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	if lkey != testLKey {
		return nil, fmt.Errorf("unknown lkey %#x", lkey)
	}
	return k.s.Slice(addr, n, perm)
}

func (k keys) Store(lkey uint32, addr uint64, p []byte) error {
	b, err := k.Translate(lkey, addr, len(p), dma.Write)
	if err != nil {
		return err
	}
	copy(b, p)
	return nil
}

type events struct {
	mu      sync.Mutex
	comp    []uint32
	cqErr   []uint32
	cqSynd  []uint8
	eqDoors []uint32
}

func (e *events) Completion(eqn, cqn uint32) {
	e.mu.Lock()
	e.comp = append(e.comp, cqn)
	e.mu.Unlock()
}

func (e *events) CQError(eqn, cqn uint32, synd uint8) {
	e.mu.Lock()
	e.cqErr = append(e.cqErr, cqn)
	e.cqSynd = append(e.cqSynd, synd)
	e.mu.Unlock()
}

func (e *events) EQDoorbell(uar, eqn, ci uint32, arm bool) {
	e.mu.Lock()
	e.eqDoors = append(e.eqDoors, eqn)
	e.mu.Unlock()
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, space: &dma.Space{}, next: 0x10000, ev: &events{}, clock: &ManualClock{}}
	e.nic = New(Config{Space: e.space, Keys: keys{e.space}, Events: e.ev, Clock: e.clock})
	return e
}

// alloc maps n zeroed bytes (rounded to 4 KiB) and returns their IOVA and the memory.
func (e *env) alloc(n int) (uint64, []byte) {
	n = (n + 4095) &^ 4095
	mem := make([]byte, n)
	iova := e.next
	e.next += uint64(n) + 0x1000
	if err := e.space.Map(iova, mem, dma.Read|dma.Write); err != nil {
		e.t.Fatal(err)
	}
	return iova, mem
}

func (e *env) id() uint32 { e.ids++; return e.ids }

// testCQ is a CQ as a driver sees it: its ring, doorbell record and consumer counter, with
// a poller that follows rdma-core/kernel/DPDK semantics.
type testCQ struct {
	e     *env
	cqn   uint32
	log   uint8
	ring  []byte
	dbr   []byte
	ci    uint32
	p     CQParams
	title [64]byte // enhanced layout: last uncompressed CQE
	// strideSize is the striding RQ stride, for the flow-tag format stride count.
	strideSize int
}

func (e *env) newCQ(log uint8, mod func(*CQParams)) *testCQ {
	iova, ring := e.alloc(64 << log)
	diova, dbr := e.alloc(64)
	c := &testCQ{e: e, cqn: e.id(), log: log, ring: ring[:64<<log], dbr: dbr[:8]}
	c.p = CQParams{CQN: c.cqn, LogSize: log, EQN: 7, Buf: Contig{e.space, iova}, DBR: Contig{e.space, diova}}
	if mod != nil {
		mod(&c.p)
	}
	// Software initialises every CQE as invalid and hardware-owned for lap 0 (rdma-core
	// cq.c/verbs.c: op_own = MLX5_CQE_INVALID << 4 | owner 1; DPDK adds vic 0xff).
	for i := 0; i < 1<<log; i++ {
		c.ring[i*64+63] = prm.CQEOpInvalid<<4 | 1
		c.ring[i*64+62] = prm.CQEVICInit
	}
	if err := e.nic.CreateCQ(c.p); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// slot returns the CQE bytes at counter i.
func (c *testCQ) slot(i uint32) []byte {
	j := i & (1<<c.log - 1)
	return c.ring[j*64 : j*64+64]
}

// valid reports whether the CQE at the consumer counter belongs to software.
func (c *testCQ) valid() bool {
	s := c.slot(c.ci)
	if c.p.Compress && c.p.Layout == LayoutEnhanced {
		return prm.CQEValidIteration(s[62], s[63], c.ci, c.log)
	}
	return prm.CQESoftwareOwned(s[63], c.ci, c.log)
}

// poll returns every CQE software owns now, decompressed, and releases them (doorbell
// record). Compressed sessions are expanded as the kernel (en_rx.c mlx5e_decompress_cqes_*)
// and DPDK (mlx5_rx.c mlx5_rx_poll_len) do; consumed slots are invalidated as DPDK does.
func (c *testCQ) poll() [][64]byte {
	var out [][64]byte
	for k := 0; k < 1<<20 && c.valid(); k++ {
		s := c.slot(c.ci)
		if prm.CQEFormat(s[63]) != prm.CQEFormatCompressed {
			var e [64]byte
			copy(e[:], s)
			out = append(out, e)
			c.title = e
			c.invalidate(c.ci, 1)
			c.ci++
			continue
		}
		if c.p.Layout == LayoutEnhanced {
			n := int(s[63]>>4) + 1
			widx := uint16(prm.CQE64.WQECounter.Get(s))
			for j := 0; j < n; j++ {
				e := c.expand(c.title, s[j*8:j*8+8], widx+uint16(j))
				out = append(out, e)
			}
			c.invalidate(c.ci, n)
			c.ci += uint32(n)
			continue
		}
		// Basic layout: this slot is the title; its byte count is the session length.
		var title [64]byte
		copy(title[:], s)
		cnt := int(prm.CQE64.ByteCnt.Get(s))
		wc := uint16(prm.CQE64.WQECounter.Get(s))
		for j := 0; j < cnt; j++ {
			at := c.ci + 1
			if j >= 8 {
				at = c.ci + uint32(j/8*8)
			}
			arr := c.slot(at)
			m := arr[(j%8)*8 : (j%8)*8+8]
			e := c.expand(title, m, wc)
			out = append(out, e)
			// The next WQE counter where the mini-CQE has no stride index.
			if st := cqeStrides(&e); st != 0 {
				wc += uint16(st)
			} else {
				wc++
			}
		}
		c.invalidate(c.ci, cnt)
		c.ci += uint32(cnt)
	}
	binary.BigEndian.PutUint32(c.dbr[0:], c.ci&0xffffff)
	return out
}

// expand rebuilds a CQE from the title and one mini-CQE of the CQ's format.
func (c *testCQ) expand(title [64]byte, m []byte, wqeCounter uint16) [64]byte {
	e := title
	switch c.p.MiniFormat {
	case MiniHash:
		prm.CQE64.RSSHashResult.Set(e[:], prm.MiniCQE.RxHashResult.Get(m))
		prm.CQE64.ByteCnt.Set(e[:], prm.MiniCQE.ByteCnt.Get(m))
		prm.CQE64.WQECounter.Set(e[:], uint64(wqeCounter))
	case MiniCsum:
		prm.CQE64.Checksum.Set(e[:], prm.MiniCQE.Checksum.Get(m))
		prm.CQE64.ByteCnt.Set(e[:], prm.MiniCQE.ByteCnt.Get(m))
		prm.CQE64.WQECounter.Set(e[:], uint64(wqeCounter))
	case MiniCsumStride:
		prm.CQE64.Checksum.Set(e[:], prm.MiniCQE.Checksum.Get(m))
		prm.CQE64.ByteCnt.Set(e[:], prm.MiniCQE.ByteCnt.Get(m))
		prm.CQE64.WQECounter.Set(e[:], prm.MiniCQE.StrideIdx.Get(m))
	case MiniFlowTag:
		bc := uint32(prm.MiniCQE.ByteCnt.Get(m))
		tag := bc>>24<<16 | uint32(prm.MiniCQE.Checksum.Get(m))
		prm.CQE64.SopDropQPN.Set(e[:], prm.CQE64.SopDropQPN.Get(e[:])&^0xffffff|uint64(tag))
		// DPDK computes the strides from the length in this format.
		// DPDK mlx5_rx.c computes the strides from the length in this format.
		l := bc & 0xffffff
		if c.strideSize > 0 {
			l |= (l + uint32(c.strideSize) - 1) / uint32(c.strideSize) << prm.MPRQByteCntStrideShift
		}
		prm.CQE64.ByteCnt.Set(e[:], uint64(l))
		prm.CQE64.WQECounter.Set(e[:], prm.MiniCQE.StrideIdx.Get(m))
	}
	e[63] = e[63] & 0xf0
	return e
}

func (c *testCQ) invalidate(from uint32, n int) {
	for i := 0; i < n; i++ {
		s := c.slot(from + uint32(i))
		s[63] = prm.CQEOpInvalid<<4 | byte((from+uint32(i))>>c.log&1^1)
		s[62] = prm.CQEVICInit
	}
}

// testRQ is an RQ with its buffers: a cyclic RQ gets one data segment of bufSize per WQE, a
// striding RQ one buffer of strides per WQE.
type testRQ struct {
	e      *env
	rqn    uint32
	cq     *testCQ
	ring   []byte
	dbr    []byte
	bufs   []uint64
	mem    [][]byte
	posted uint32
	p      RQParams
}

func (e *env) newRQ(cq *testCQ, logSize uint8, bufSize int, stride, strides int) *testRQ {
	r := &testRQ{e: e, rqn: e.id(), cq: cq}
	wqeSize := 16
	typ := WQCyclic
	if strides > 0 {
		wqeSize, typ, bufSize = 32, WQLinkedListStrided, stride*strides
	}
	logStride := uint8(4)
	if wqeSize == 32 {
		logStride = 5
	}
	iova, ring := e.alloc(wqeSize << logSize)
	diova, dbr := e.alloc(8)
	r.ring, r.dbr = ring, dbr[:8]
	for i := 0; i < 1<<logSize; i++ {
		biova, b := e.alloc(bufSize)
		r.bufs = append(r.bufs, biova)
		r.mem = append(r.mem, b[:bufSize])
		if typ == WQLinkedListStrided {
			// The kernel links each WQE to the next at creation (wq.c mlx5_wq_ll_init).
			prm.WQESrqNext.NextWQEIndex.Set(ring[i*wqeSize:], uint64((i+1)&(1<<logSize-1)))
		}
		seg := ring[i*wqeSize+wqeSize-16:]
		prm.WQEData.ByteCount.Set(seg, uint64(bufSize))
		prm.WQEData.LKey.Set(seg, testLKey)
		prm.WQEData.Addr.Set(seg, biova)
	}
	r.p = RQParams{RQN: r.rqn, CQN: cq.cqn, WQ: WQParams{Type: typ, LogStride: logStride, LogSize: logSize,
		Buf: Contig{e.space, iova}, DBR: Contig{e.space, diova}, StrideSize: stride, NumStrides: strides}}
	if e.rqMod != nil {
		e.rqMod(&r.p)
	}
	if err := e.nic.CreateRQ(r.p); err != nil {
		e.t.Fatal(err)
	}
	if err := e.nic.ModifyRQ(r.rqn, RQModify{CurrState: StateReset, NextState: StateReady}); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// post makes k more WQEs available (receive counter in the doorbell record).
func (r *testRQ) post(k int) {
	r.posted += uint32(k)
	binary.BigEndian.PutUint32(r.dbr[0:], r.posted&0xffff)
}

// direct sets up a root NIC RX table that sends everything to a direct TIR on r.
func (e *env) direct(r *testRQ) {
	tirn := e.id()
	if err := e.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: r.rqn}); err != nil {
		e.t.Fatal(err)
	}
	e.catchAll(Dest{Type: DestTIR, ID: tirn}, 0)
}

// catchAll makes a root table with one match-everything entry forwarding to d.
func (e *env) catchAll(d Dest, flowTag uint32) {
	ft := e.id()
	must(e.t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 4}))
	g := e.id()
	must(e.t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, Start: 0, End: 0}))
	must(e.t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Index: 0, Action: ActionFwdDest, FlowTag: flowTag, Dests: []Dest{d}}))
	must(e.t, e.nic.SetRoot(TableNICRX, ft))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame with valid checksums and a payload of n bytes.
func udpFrame(src, dst [4]byte, sport, dport uint16, n int, fill byte) []byte {
	f := make([]byte, 14+20+8+n)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], etherIPv4)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, protoUDP
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+n))
	for i := 0; i < n; i++ {
		u[8+i] = fill + byte(i)
	}
	h := parseL2(f, 0)
	fillChecksums(f, &h, true, true)
	return f
}

// testSQ is an SQ with its ring: WQEs are written at the producer counter in basic blocks,
// the doorbell record's send counter is updated and the doorbell rung with the control
// segment's first 8 bytes, as rdma-core qp.c and DPDK mlx5_tx.h do.
type testSQ struct {
	e    *env
	sqn  uint32
	cq   *testCQ
	ring []byte
	dbr  []byte
	log  uint8
	pc   uint32
	p    SQParams
}

func (e *env) newSQ(cq *testCQ, log uint8, mod func(*SQParams)) *testSQ {
	tisn := e.id()
	must(e.t, e.nic.CreateTIS(TISParams{TISN: tisn}))
	iova, ring := e.alloc(64 << log)
	diova, dbr := e.alloc(8)
	s := &testSQ{e: e, sqn: e.id(), cq: cq, ring: ring[:64<<log], dbr: dbr[:8], log: log}
	s.p = SQParams{SQN: s.sqn, CQN: cq.cqn, TISN: tisn, AllowMPW: true, WQ: WQParams{Type: WQCyclic, LogStride: 6, LogSize: log,
		Buf: Contig{e.space, iova}, DBR: Contig{e.space, diova}}}
	if mod != nil {
		mod(&s.p)
	}
	must(e.t, e.nic.CreateSQ(s.p))
	must(e.t, e.nic.ModifySQ(s.sqn, SQModify{CurrState: StateReset, NextState: StateReady}))
	return s
}

// wqe is a WQE under construction: 16-byte units after the control segment.
type wqe struct {
	opcode, opmod uint8
	fm            uint8
	body          []byte
}

// eth appends an Ethernet segment with checksum flags and inline headers.
func (w *wqe) eth(cs uint8, inline []byte) *wqe {
	seg := make([]byte, 16)
	prm.WQEEth.CSFlags.Set(seg, uint64(cs))
	prm.WQEEth.InlineHdrSz.Set(seg, uint64(len(inline)))
	if len(inline) > 0 {
		k := copy(seg[14:], inline)
		rest := inline[k:]
		seg = append(seg, rest...)
		for len(seg)%16 != 0 {
			seg = append(seg, 0)
		}
	}
	w.body = append(w.body, seg...)
	return w
}

// vlan appends an Ethernet segment asking for VLAN insertion.
func (w *wqe) vlan(cs uint8, tci uint16) *wqe {
	seg := make([]byte, 16)
	prm.WQEEth.CSFlags.Set(seg, uint64(cs))
	binary.BigEndian.PutUint32(seg[12:], uint32(prm.WQEEthInsertVLAN)<<16|uint32(tci))
	w.body = append(w.body, seg...)
	return w
}

// ptr appends a pointer data segment.
func (w *wqe) ptr(lkey uint32, addr uint64, n int) *wqe {
	seg := make([]byte, 16)
	prm.WQEData.ByteCount.Set(seg, uint64(n))
	prm.WQEData.LKey.Set(seg, uint64(lkey))
	prm.WQEData.Addr.Set(seg, addr)
	w.body = append(w.body, seg...)
	return w
}

// inl appends an inline data segment.
func (w *wqe) inl(data []byte) *wqe {
	seg := binary.BigEndian.AppendUint32(nil, uint32(len(data))|prm.WQEInlineSeg)
	seg = append(seg, data...)
	for len(seg)%16 != 0 {
		seg = append(seg, 0)
	}
	w.body = append(w.body, seg...)
	return w
}

// post writes the WQE at the producer counter and advances it; it returns the WQE index.
func (s *testSQ) post(w *wqe) uint16 {
	idx := uint16(s.pc)
	ds := 1 + len(w.body)/16
	b := make([]byte, 16, 16+len(w.body))
	prm.WQECtrl.OpModIdxOpcode.Set(b, uint64(w.opmod)<<24|uint64(idx)<<8|uint64(w.opcode))
	prm.WQECtrl.QPNDS.Set(b, uint64(s.sqn)<<8|uint64(ds&0x3f))
	prm.WQECtrl.FmCeSe.Set(b, uint64(w.fm))
	b = append(b, w.body...)
	nbb := (len(b) + 63) / 64
	mask := uint32(1)<<s.log - 1
	for i := 0; i < nbb; i++ {
		dst := s.ring[((s.pc+uint32(i))&mask)*64:][:64]
		clear(dst)
		copy(dst, b[min(len(b), i*64):])
	}
	s.pc += uint32(nbb)
	return idx
}

// doorbell updates the doorbell record and rings the doorbell with the last WQE's head.
func (s *testSQ) doorbell(idx uint16) {
	binary.BigEndian.PutUint32(s.dbr[4:], s.pc&0xffff)
	var db [8]byte
	binary.BigEndian.PutUint32(db[:], uint32(idx)<<8)
	binary.BigEndian.PutUint32(db[4:], s.sqn<<8)
	s.e.nic.UARWrite(0, prm.UARBlueFlame, db[:])
}

// send posts and rings one SEND with the whole frame inline as headers (up to 64 bytes)
// and the rest as a pointer segment in fresh memory.
func (s *testSQ) send(f []byte, cs uint8, fm uint8) uint16 {
	hdr := min(len(f), 64)
	w := (&wqe{opcode: prm.WQEOpSend, fm: fm}).eth(cs, f[:hdr])
	if len(f) > hdr {
		iova, mem := s.e.alloc(len(f) - hdr)
		copy(mem, f[hdr:])
		w.ptr(testLKey, iova, len(f)-hdr)
	}
	idx := s.post(w)
	s.doorbell(idx)
	return idx
}
