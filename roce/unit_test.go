package roce

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

func randName() string {
	const letters = "abcdefghijklmnopqrstuvwxyz_0123456789"
	b := make([]byte, 1+rand.IntN(nameLen))
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

func TestTableRoundTrip(t *testing.T) {
	for range 50 {
		n := rand.IntN(MaxAdvertised + 1)
		in := make([]LocalMR, n)
		seen := map[string]bool{}
		for i := range in {
			name := randName()
			for seen[name] {
				name = randName()
			}
			seen[name] = true
			in[i] = LocalMR{Name: name, Addr: rand.Uint64() >> 1, Length: rand.Uint64() >> 2, RKey: rand.Uint32(),
				RemoteWrite: rand.IntN(2) == 0, RemoteRead: rand.IntN(2) == 0}
		}
		buf := make([]byte, tableMaxLen)
		k, err := encodeTable(buf, in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeTable(buf[:k])
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != n {
			t.Fatalf("%d entries back, %d sent", len(out), n)
		}
		for i := range in {
			a, b := in[i], out[i]
			if a.Name != b.Name || a.Addr != b.Addr || a.Length != b.Length || a.RKey != b.RKey || a.RemoteWrite != b.RemoteWrite || a.RemoteRead != b.RemoteRead {
				t.Fatalf("entry %d: %+v → %+v", i, a, b)
			}
		}
	}
}

func TestTableRejectsBadInput(t *testing.T) {
	buf := make([]byte, tableMaxLen)
	if _, err := encodeTable(buf, make([]LocalMR, MaxAdvertised+1)); err == nil {
		t.Error("17 regions encoded")
	}
	if _, err := encodeTable(buf, []LocalMR{{Name: strings.Repeat("x", nameLen+1)}}); err == nil {
		t.Error("a 33-byte name encoded")
	}
	if _, err := encodeTable(buf[:20], []LocalMR{{Name: "a"}}); err == nil {
		t.Error("a table encoded into a buffer too small")
	}
	good := make([]byte, tableMaxLen)
	n, _ := encodeTable(good, []LocalMR{{Name: "a", Addr: 1, Length: 2}, {Name: "b", Addr: 3, Length: 4}})
	for _, c := range []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"count past the data", func(b []byte) []byte { b[9] = 9; return b[:n] }},
		{"count past the maximum", func(b []byte) []byte { b[8], b[9] = 1, 0; return b }},
		{"duplicate name", func(b []byte) []byte { b[tableHdrLen+tableEntryLen] = 'a'; return b[:n] }},
		{"empty name", func(b []byte) []byte { clear(b[tableHdrLen : tableHdrLen+nameLen]); return b[:n] }},
		{"wrapping region", func(b []byte) []byte {
			for i := range 16 {
				b[tableHdrLen+32+i] = 0xff
			}
			return b[:n]
		}},
	} {
		b := append([]byte(nil), good...)
		if _, err := decodeTable(c.mod(b)); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
	// Fuzz-ish: random bytes never panic and rarely decode.
	for range 1000 {
		b := make([]byte, rand.IntN(tableMaxLen+10))
		for i := range b {
			b[i] = byte(rand.Uint32())
		}
		if rand.IntN(2) == 0 && len(b) >= 8 {
			copy(b, tableMagic)
		}
		decodeTable(b)
	}
}

func TestPrivateData(t *testing.T) {
	pd := privateData()
	if !speaksTable(pd) || !speaksTable(append(pd, make([]byte, 50)...)) {
		t.Error("own private data not recognised (also zero-padded)")
	}
	for _, b := range [][]byte{nil, make([]byte, 56), []byte("DQRI"), append([]byte("DQRI"), 9, 0)} {
		if speaksTable(b) {
			t.Errorf("%x recognised as the tag", b)
		}
	}
}

func TestTunables(t *testing.T) {
	t.Setenv(EnvSignalEvery, "")
	t.Setenv(EnvMinRNRTimer, "")
	if every, rnr, err := tunables(); err != nil || every != 1 || rnr != DefaultMinRNRTimer {
		t.Errorf("defaults: %d %d %v", every, rnr, err)
	}
	n := 1 + rand.IntN(sqDepth/2)
	r := rand.IntN(32)
	t.Setenv(EnvSignalEvery, strconv.Itoa(n))
	t.Setenv(EnvMinRNRTimer, strconv.Itoa(r))
	if every, rnr, err := tunables(); err != nil || every != n || int(rnr) != r {
		t.Errorf("%d/%d: %d %d %v", n, r, every, rnr, err)
	}
	for _, c := range [][2]string{{EnvSignalEvery, "0"}, {EnvSignalEvery, "x"}, {EnvSignalEvery, "100000"}, {EnvMinRNRTimer, "32"}, {EnvMinRNRTimer, "-1"}} {
		t.Setenv(EnvSignalEvery, "")
		t.Setenv(EnvMinRNRTimer, "")
		t.Setenv(c[0], c[1])
		if _, _, err := tunables(); err == nil || !strings.Contains(err.Error(), c[0]) {
			t.Errorf("%s=%s: %v", c[0], c[1], err)
		}
	}
}

func TestOpcodesAndReasons(t *testing.T) {
	want := []string{"CONNECT", "SEND", "RECEIVE", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "RDMA_READ_IMM", "INVALID"}
	for i, w := range want {
		if Opcode(i).String() != w {
			t.Errorf("Opcode(%d) = %s, want %s", i, Opcode(i), w)
		}
	}
	if Opcode(42).String() != "Opcode(42)" || Reason(99).String() != "unknown" || ReasonTxPostFailure.String() != "tx_post_failure" {
		t.Error("names")
	}
	var rc reasonCounters
	rc.add(ReasonRxCompletionError, 3)
	rc.add(ReasonRxCompletionError, 0)
	if m := rc.snapshot(); len(m) != 1 || m["rx_completion_error"] != 3 {
		t.Errorf("snapshot %v", m)
	}
	if !errors.Is(ErrDisconnected, engine.ErrConnectFailure) || !errors.Is(ErrNoDMABuf, engine.ErrNotSupported) {
		t.Error("error matching")
	}
}

// testPort builds a port with real (host) regions for checkPort.
func testPort(t *testing.T, transport string, local string, access config.Access, rxRegions int) (*engine.Port, *config.Config) {
	t.Helper()
	mrc := config.MemoryRegion{Name: "m", Kind: config.KindHost, Access: access, NumBufs: 2, BufSize: 64}
	cfg := &config.Config{MemoryRegions: []config.MemoryRegion{mrc}, Interfaces: []config.Interface{{Name: "r",
		Socket: &config.SocketConfig{Mode: config.ModeServer, Local: config.Endpoint{Proto: config.ProtoRoCE, Host: local, Port: 1}},
		RoCE:   &config.RoCEConfig{TransportMode: transport}}}}
	r, err := engine.NewRegion(&mrc, fakeMem(make([]byte, 128)))
	if err != nil {
		t.Fatal(err)
	}
	p := &engine.Port{ID: 0, Name: "r", Config: &cfg.Interfaces[0]}
	regions := make([]*engine.Region, rxRegions)
	for i := range regions {
		regions[i] = r
	}
	rq, _ := engine.NewRxQueue(p, 0, &config.Queue{}, regions, nil, 4)
	p.Rx = []*engine.RxQueue{rq}
	return p, cfg
}

type fakeMem []byte

func (m fakeMem) Bytes() []byte  { return m }
func (m fakeMem) Addr() uintptr  { return 0x1000 }
func (m fakeMem) Close() error   { return nil }
func (m fakeMem) String() string { return "fake" }

func TestCheckPort(t *testing.T) {
	for _, c := range []struct {
		transport, local string
		access           config.Access
		rx               int
		want             string
	}{
		{"RC", "10.0.0.1", config.AccessLocal | config.AccessRDMARead, 1, ""},
		{"UC", "10.0.0.1", config.AccessLocal | config.AccessRDMAWrite, 1, ""},
		{"UC", "10.0.0.1", config.AccessLocal | config.AccessRDMARead, 1, "UC cannot serve RDMA READ"},
		{"UD", "10.0.0.1", config.AccessLocal, 1, "UD is not supported"},
		{"XX", "10.0.0.1", config.AccessLocal, 1, "invalid transport_mode"},
		{"RC", "host.example", config.AccessLocal, 1, "needs an IP address"},
		{"RC", "10.0.0.1", config.AccessLocal, 2, "list exactly one"},
	} {
		p, cfg := testPort(t, c.transport, c.local, c.access, c.rx)
		e := &Engine{env: &engine.Env{Config: cfg}}
		err := e.checkPort(p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
}

func TestHeaderState(t *testing.T) {
	mrc := config.MemoryRegion{Name: "m", Kind: config.KindHost, NumBufs: 4, BufSize: 64}
	r, _ := engine.NewRegion(&mrc, fakeMem(make([]byte, 256)))
	meta, _ := engine.NewMetaPool("tx", 2, 4, true)
	p := &engine.Port{ID: 0, Name: "r", Config: &config.Interface{}}
	q := engine.NewTxQueue(p, 0, &config.Queue{BatchSize: 1}, []*engine.Region{r}, meta)
	e := &Engine{st: states{m: map[*engine.Burst]*burstState{}}}
	b, err := q.NewBurst(1)
	if err != nil {
		t.Fatal(err)
	}
	if OpOf(b) != OpSend || CompletionOf(b) != nil {
		t.Error("a fresh TX burst is not a SEND")
	}
	if _, ok := HeaderOf(b); ok {
		t.Error("a fresh burst has a header")
	}
	h := Header{Op: OpWriteImm, Conn: rand.Uint64() | 1, RemoteMR: "x", Imm: rand.Uint32(), Tag: rand.Uint64()}
	if err := e.SetHeader(b, h); err != nil {
		t.Fatal(err)
	}
	if got, ok := HeaderOf(b); !ok || got != h || OpOf(b) != OpWriteImm || b.ConnID() != h.Conn {
		t.Errorf("header %+v %v op %v conn %d", got, ok, OpOf(b), b.ConnID())
	}
	for _, op := range []Opcode{OpReadImm, OpReceive} {
		if err := e.SetHeader(b, Header{Op: op}); !errors.Is(err, engine.ErrNotSupported) {
			t.Errorf("SetHeader(%v) = %v", op, err)
		}
	}
	for _, op := range []Opcode{OpConnect, OpInvalid, Opcode(77)} {
		if err := e.SetHeader(b, Header{Op: op}); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Errorf("SetHeader(%v) = %v", op, err)
		}
	}
	// A recycled burst forgets its header; its state object is reused.
	st := b.Engine.(*burstState)
	b.Free()
	b2, _ := q.NewBurst(1)
	if _, ok := HeaderOf(b2); ok {
		t.Error("a recycled burst kept its header")
	}
	e.SetHeader(b2, Header{Op: OpRead})
	if b2 == b && b2.Engine.(*burstState) != st {
		t.Error("the burst's state was reallocated")
	}
	b2.Free()
	// An RX burst is not an RDMA burst unless the engine made it one.
	rmeta, _ := engine.NewMetaPool("rx", 2, 4, false)
	rq, _ := engine.NewRxQueue(p, 0, &config.Queue{BatchSize: 1}, []*engine.Region{r}, rmeta, 4)
	rb, _ := rq.NewBurst()
	if OpOf(rb) == OpReceive {
		t.Error("a plain burst reports RECEIVE")
	}
	if err := e.SetHeader(rb, Header{Op: OpSend}); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Errorf("SetHeader on an RX-pool burst: %v", err)
	}
	rb.Free()
}

func TestCompletionAccessors(t *testing.T) {
	var c *Completion
	if _, ok := c.Imm(0); ok || c.WriteLen(0) != 0 {
		t.Error("nil completion")
	}
	c = &Completion{}
	c.Reset(OpReceive, 7)
	v := rand.Uint32()
	c.Append(0, false, 0)
	c.Append(v, true, 1234)
	if _, ok := c.Imm(0); ok {
		t.Error("packet 0 has no immediate")
	}
	if got, ok := c.Imm(1); !ok || got != v || c.WriteLen(1) != 1234 || c.Conn != 7 {
		t.Errorf("packet 1: %d %v %d", got, ok, c.WriteLen(1))
	}
	if _, ok := c.Imm(2); ok || c.WriteLen(-1) != 0 {
		t.Error("out of range")
	}
}
