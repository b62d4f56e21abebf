package datapath

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// fuzzSyndromes are the error CQE syndromes a send queue may complete with (mlx5dv.h
// MLX5_CQE_SYNDROME_*): anything else from the model is a bug.
var fuzzSyndromes = map[uint8]bool{
	prm.CQESyndLocalLength: true, prm.CQESyndLocalQPOp: true, prm.CQESyndLocalProt: true,
	prm.CQESyndWRFlush: true, prm.CQESyndLocalAccess: true,
}

// fuzzSeeds are well-formed and malformed WQEs: the first byte is the fuzz flags (bit 0
// allows eMPW, bit 1 stamps real time, bit 7 keeps the input's SQ number), the rest the
// WQE as posted (the control segment's SQ number is the fuzzed SQ's unless bit 7 is set).
func fuzzSeeds() [][]byte {
	f := udpFrame([4]byte{10, 1, 0, 1}, [4]byte{10, 1, 0, 2}, 1000, 4789, 80, 7)
	build := func(w *wqe) []byte {
		ds := 1 + len(w.body)/16
		b := make([]byte, 16, 16+len(w.body))
		prm.WQECtrl.OpModIdxOpcode.Set(b, uint64(w.opmod)<<24|uint64(w.opcode))
		prm.WQECtrl.QPNDS.Set(b, uint64(ds&0x3f))
		prm.WQECtrl.FmCeSe.Set(b, uint64(w.fm))
		return append(b, w.body...)
	}
	wait := make([]byte, prm.WQEWaitSize)
	binary.BigEndian.PutUint32(wait, prm.WaitCondCyclicSmaller)
	binary.BigEndian.PutUint64(wait[prm.WaitMaskOff:], ^uint64(0))
	var seeds [][]byte
	for _, w := range []*wqe{
		(&wqe{opcode: prm.WQEOpSend, fm: prm.WQECtrlCQUpdate}).eth(prm.WQEEthL3Csum|prm.WQEEthL4Csum, f[:42]).inl(f[42:]),
		(&wqe{opcode: prm.WQEOpSend, fm: prm.WQECtrlCQUpdate}).eth(0, f[:18]).ptr(testLKey, fuzzBuf, 64),
		(&wqe{opcode: prm.WQEOpSend}).vlan(prm.WQEEthL4Csum, 0x123).inl(f),
		(&wqe{opcode: prm.WQEOpEnhancedMPSW, fm: prm.WQECtrlCQUpdate}).eth(0, nil).inl(f).ptr(testLKey, fuzzBuf, 60).inl(f[:20]),
		(&wqe{opcode: prm.WQEOpSend}).eth(0, f[:18]).ptr(testLKey, fuzzBuf, 0),
		(&wqe{opcode: prm.WQEOpSend}).eth(0, f[:18]).ptr(0x77, fuzzBuf, 64),
		{opcode: prm.WQEOpNOP, fm: prm.WQECtrlCQUpdate},
		{opcode: prm.WQEOpWait, opmod: prm.WaitOpModTime, body: wait},
		{opcode: prm.WQEOpTSO},
	} {
		seeds = append(seeds, append([]byte{1}, build(w)...))
	}
	return append(seeds, []byte{0x80}, []byte{0, 0, 0, 0, 0x0a, 0, 0, 0, 0})
}

// fuzzBuf is where the fuzz port maps memory that pointer segments may name.
const fuzzBuf = 0x10000

// FuzzWQE posts arbitrary bytes as send WQEs and runs them through the SQ, the wire and
// another port's RX steering: the model must never panic, and every completion must be a
// requester CQE or an error CQE with a PRM syndrome.
func FuzzWQE(f *testing.F) {
	seeds := fuzzSeeds()
	for _, s := range seeds {
		f.Add(s)
	}
	if os.Getenv("DAQIRI_WRITE_FUZZ_SEEDS") != "" {
		writeSeeds(f, "FuzzWQE", seeds)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1+8*prm.SendWQEBB {
			return
		}
		flags, w := data[0], data[1:]
		a, b := newEnv(t), newEnv(t)
		if iova, _ := a.alloc(4096); iova != fuzzBuf {
			t.Fatalf("fuzz buffer at %#x", iova)
		}
		Cable(a.nic, b.nic)
		cq := a.newCQ(4, nil)
		s := a.newSQ(cq, 4, func(p *SQParams) {
			p.AllowMPW = flags&1 != 0
			if flags&2 != 0 {
				p.TSFormat = TSRealTime
			}
		})
		rcq := b.newCQ(4, nil)
		r := b.newRQ(rcq, 4, 2048, 0, 0)
		r.post(16)
		tirn := b.id()
		must(t, b.nic.CreateTIR(TIRParams{TIRN: tirn, InlineRQ: r.rqn}))
		fuzzSteering(t, b, tirn)
		buf := make([]byte, (len(w)+63)&^63)
		copy(buf, w)
		if len(buf) >= 8 && flags&0x80 == 0 {
			v := binary.BigEndian.Uint32(buf[4:])
			binary.BigEndian.PutUint32(buf[4:], s.sqn<<8|v&0xff)
		}
		copy(s.ring, buf)
		s.pc = uint32(len(buf) / 64)
		s.doorbell(0)
		for i := 0; i < 8; i++ {
			a.nic.Step(16)
			b.nic.Step(16)
		}
		for _, c := range cq.poll() {
			switch op := prm.CQEOpcode(c[63]); op {
			case prm.CQEOpReq:
			case prm.CQEOpReqErr:
				if synd := uint8(prm.ErrCQE.Syndrome.Get(c[:])); !fuzzSyndromes[synd] {
					t.Fatalf("error CQE with syndrome %#x", synd)
				}
			default:
				t.Fatalf("send CQ got opcode %d", op)
			}
		}
		for _, c := range rcq.poll() {
			if op := prm.CQEOpcode(c[63]); op != prm.CQEOpRespSend && op != prm.CQEOpRespErr {
				t.Fatalf("receive CQ got opcode %d", op)
			}
		}
		q, err := a.nic.QuerySQ(s.sqn)
		if err != nil || (q.Params.State != StateReady && q.Params.State != StateError) {
			t.Fatalf("SQ state %d, %v", q.Params.State, err)
		}
	})
}

// fuzzSteering gives the receiving port a root table matching UDP port 4789 with a VXLAN
// VNI (to TIR tirn), dropping TCP, and missing to a second table that sends the rest there
// too.
func fuzzSteering(t *testing.T, e *env, tirn uint32) {
	t2 := e.id()
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: t2, Level: 1, LogSize: 2}))
	g2 := e.id()
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: t2, ID: g2, Start: 0, End: 0}))
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: t2, Group: g2, Action: ActionFwdDest, Dests: []Dest{{DestTIR, tirn}}}))
	t1 := e.id()
	must(t, e.nic.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: t1, LogSize: 3, MissAction: 1, MissTable: t2}))
	crit := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.IPProtocol.Set(crit, 0xff)
	prm.FTEMatchSetLyr24.UDPDport.Set(crit[prm.FTEMatchParam.OuterHeaders.ByteOff():], 0xffff)
	prm.FTEMatchSetMisc.VXLANVNI.Set(crit[prm.FTEMatchParam.MiscParameters.ByteOff():], 0xffffff)
	g1 := e.id()
	must(t, e.nic.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: t1, ID: g1, Start: 0, End: 3, CriteriaEnable: 3, Criteria: crit}))
	val := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.IPProtocol.Set(val, protoUDP)
	prm.FTEMatchSetLyr24.UDPDport.Set(val, vxlanPort)
	prm.FTEMatchSetMisc.VXLANVNI.Set(val[prm.FTEMatchParam.MiscParameters.ByteOff():], 42)
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: t1, Group: g1, Index: 0, Action: ActionFwdDest, FlowTag: 9, Dests: []Dest{{DestTIR, tirn}}, Value: val}))
	tcp := make([]byte, matchParamBytes)
	prm.FTEMatchSetLyr24.IPProtocol.Set(tcp, protoTCP)
	must(t, e.nic.SetFTE(FTEParams{Type: TableNICRX, Table: t1, Group: g1, Index: 1, Action: ActionDrop, Value: tcp}))
	must(t, e.nic.SetRoot(TableNICRX, t1))
}

// writeSeeds stores seeds in testdata/fuzz/<name> in the go fuzz corpus format, so that the
// committed corpus can be regenerated after a change to the seeds.
func writeSeeds(f *testing.F, name string, seeds [][]byte) {
	dir := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	for i, s := range seeds {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
}

// FuzzReceive sends arbitrary frames through RX steering (tunnel match, drop, miss to the
// next table), an RSS TIR hashing inner headers of tunneled frames, and a striding RQ on a
// compressing CQ: no panic, and every completion is a receive CQE or a receive error CQE
// that decompresses to a frame of the length received.
func FuzzReceive(f *testing.F) {
	vx := udpFrame([4]byte{192, 168, 0, 1}, [4]byte{192, 168, 0, 2}, 5, vxlanPort, 8+60, 0)
	vx[42], vx[46], vx[47], vx[48] = 0x08, 0, 0, 42
	copy(vx[50:], udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 10, 0))
	seeds := []struct {
		frame []byte
		mode  uint8
	}{
		{udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 30, 0), 0},
		{vx, 1},
		{vx, 3},
		{udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, 900, 0), 1},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3, 4, 5, 0x81, 0, 0, 5, 0x88, 0xa8}, 2},
	}
	for i, sd := range seeds {
		f.Add(sd.frame, sd.mode)
		if os.Getenv("DAQIRI_WRITE_FUZZ_SEEDS") != "" {
			dir := filepath.Join("testdata", "fuzz", "FuzzReceive")
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint8(%d)\n", strconv.Quote(string(sd.frame)), sd.mode)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				f.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte, mode uint8) {
		if len(frame) > 4096 {
			return
		}
		e := newEnv(t)
		c := e.newCQ(5, func(p *CQParams) {
			p.Compress = mode&1 != 0
			p.Layout = CompLayout(mode >> 1 & 1)
			p.MiniFormat = MiniCsumStride
		})
		c.strideSize = 64
		r := e.newRQ(c, 2, 0, 64, 16)
		r.post(4)
		rqtn, tirn := e.id(), e.id()
		must(t, e.nic.CreateRQT(RQTParams{RQTN: rqtn, RQNs: []uint32{r.rqn}}))
		must(t, e.nic.CreateTIR(TIRParams{TIRN: tirn, Indirect: true, RQT: rqtn, HashFn: 2, Tunneled: true,
			Outer: HashFields{UDP: true, Selected: 0xf}, Inner: HashFields{Selected: 0x3}}))
		fuzzSteering(t, e, tirn)
		for i := 0; i < 3; i++ {
			e.nic.Receive(frame)
		}
		e.nic.Step(8)
		for _, q := range c.poll() {
			switch op := prm.CQEOpcode(q[63]); op {
			case prm.CQEOpRespSend:
				bc := uint32(prm.CQE64.ByteCnt.Get(q[:]))
				if bc&prm.MPRQByteCntFiller == 0 && int(bc&prm.MPRQByteCntLenMask) > len(frame)+4 {
					t.Fatalf("CQE byte count %d for a %d-byte frame", bc&prm.MPRQByteCntLenMask, len(frame))
				}
			case prm.CQEOpRespErr:
			default:
				t.Fatalf("receive CQ got opcode %d", op)
			}
		}
	})
}
