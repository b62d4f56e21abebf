package trace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// fake is a channel that answers from a script: a command whose input's byte 15 is odd
// fails with BAD_PARAM and a syndrome; byte 14 == 0xee fails before the device (no status).
type fake struct {
	name   string
	mu     sync.Mutex
	nextID uint32
	closed bool
}

func (f *fake) Name() string { return f.name }

func (f *fake) answer(in, out []byte) error {
	if len(in) >= 16 && in[14] == 0xee {
		return errors.New("transport lost the command")
	}
	for i := range out {
		out[i] = byte(i * 7)
	}
	prm.CmdOut.Status.Set(out, 0)
	if len(in) >= 16 && in[15]&1 == 1 {
		syn := rand.Uint32()
		prm.CmdOut.Status.Set(out, uint64(prm.StatusBadParamErr))
		prm.CmdOut.Syndrome.Set(out, uint64(syn))
		op := uint16(prm.CmdIn.Opcode.Get(in))
		return &channel.CommandError{Opcode: op, Status: uint8(prm.StatusBadParamErr), Syndrome: syn, Name: prm.CmdOp(op).String()}
	}
	return nil
}

func (f *fake) Exec(in, out []byte) error {
	if len(in) < 8 {
		return fmt.Errorf("command of %d bytes", len(in))
	}
	return f.answer(in, out)
}

func (f *fake) Create(in, out []byte) (channel.Object, error) {
	if err := f.answer(in, out); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.nextID++
	id := f.nextID
	f.mu.Unlock()
	prm.GeneralObjOutCmdHdr.ObjID.Set(out, uint64(id))
	return &fakeObj{f: f, id: id}, nil
}

type fakeObj struct {
	f    *fake
	id   uint32
	gone bool
}

func (o *fakeObj) ID() uint32                  { return o.id }
func (o *fakeObj) Modify(in, out []byte) error { return o.f.answer(in, out) }
func (o *fakeObj) Query(in, out []byte) error  { return o.f.answer(in, out) }
func (o *fakeObj) Destroy() error {
	if o.gone {
		return channel.ErrClosed
	}
	o.gone = true
	return nil
}

type fakeUMEM struct{ id uint32 }

func (u fakeUMEM) ID() uint32     { return u.id }
func (u fakeUMEM) Release() error { return nil }

type fakeUAR struct{ idx uint32 }

func (u fakeUAR) Index() uint32          { return u.idx }
func (u fakeUAR) Write64(uint32, uint64) {}
func (u fakeUAR) Write32(uint32, uint32) {}
func (u fakeUAR) Release() error         { return nil }
func (f *fake) RegisterMemory(mem []byte, _ channel.Access) (channel.UMEM, error) {
	if len(mem) == 0 {
		return nil, errors.New("empty memory")
	}
	return fakeUMEM{uint32(len(mem))}, nil
}
func (f *fake) AllocUAR() (channel.UAR, error) { return fakeUAR{7}, nil }
func (f *fake) EQN(v int) (uint32, error) {
	if v < 0 {
		return 0, channel.ErrUnsupported
	}
	return uint32(10 + v), nil
}
func (f *fake) AttachRoot(t uint32) (func() error, error) { return func() error { return nil }, nil }
func (f *fake) Close() error                              { f.closed = true; return nil }

var ops = []prm.CmdOp{prm.CmdOpQueryHCACap, prm.CmdOpCreateCQ, prm.CmdOpCreateTIR, prm.CmdOpManagePages, prm.CmdOpQueryPages, prm.CmdOpSetFlowTableEntry, 0x7777}

func randCmd(n int) []byte {
	in := make([]byte, n)
	for i := range in {
		in[i] = byte(rand.Uint32())
	}
	prm.CmdIn.Opcode.Set(in, uint64(ops[rand.IntN(len(ops))]))
	prm.CmdIn.OpMod.Set(in, uint64(rand.IntN(4)))
	in[14] = 0
	return in
}

// TestRoundTrip drives a traced fake channel with random calls (successes, firmware
// failures with syndromes, transport failures) and decodes the trace: every call is one
// record, in order, with what happened.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	sink := NewSink(&buf)
	tc := Wrap(&fake{name: "fake:0"}, sink)
	type want struct {
		call   string
		in     []byte
		out    []byte
		obj    uint32
		hasObj bool
		failed bool
		status bool
	}
	var wants []want
	var objs []channel.Object
	for range 300 {
		in, out := randCmd(16+8*rand.IntN(40)), make([]byte, 16+8*rand.IntN(40))
		if rand.IntN(10) == 0 {
			in[14] = 0xee
		}
		switch k := rand.IntN(6); {
		case k == 0 && len(objs) > 0:
			i := rand.IntN(len(objs))
			err := objs[i].Destroy()
			wants = append(wants, want{call: "destroy", obj: objs[i].ID(), hasObj: true, failed: err != nil})
		case k == 1 && len(objs) > 0:
			o := objs[rand.IntN(len(objs))]
			err := o.Modify(in, out)
			wants = append(wants, want{"modify", in, out, o.ID(), true, err != nil, in[14] != 0xee})
		case k == 2:
			o, err := tc.Create(in, out)
			w := want{"create", in, out, 0, false, err != nil, in[14] != 0xee}
			if err == nil {
				objs = append(objs, o)
				w.obj, w.hasObj = o.ID(), true
			}
			wants = append(wants, w)
		case k == 3:
			e, err := tc.EQN(rand.IntN(4) - 1)
			wants = append(wants, want{call: "eqn", obj: e, hasObj: err == nil, failed: err != nil})
		default:
			err := tc.Exec(in, out)
			wants = append(wants, want{"exec", in, out, 0, false, err != nil, in[14] != 0xee})
		}
	}
	// A command shorter than its header is the channel's to refuse; the record still decodes.
	short := tc.Exec([]byte{1, 2, 3}, make([]byte, 16))
	wants = append(wants, want{call: "exec", failed: short != nil})
	u, _ := tc.RegisterMemory(make([]byte, 4096), channel.AccessLocalWrite)
	u.Release()
	wants = append(wants, want{call: "umem_reg", obj: 4096, hasObj: true}, want{call: "umem_release", obj: 4096, hasObj: true})
	detach, _ := tc.AttachRoot(5)
	detach()
	wants = append(wants, want{call: "attach_root", obj: 5, hasObj: true}, want{call: "detach_root", obj: 5, hasObj: true})
	tc.Close()
	wants = append(wants, want{call: "close"})

	recs, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(wants) {
		t.Fatalf("%d records for %d calls", len(recs), len(wants))
	}
	for i, r := range recs {
		w := wants[i]
		if r.Seq != uint64(i+1) || r.Call != w.call || r.Channel != "fake:0" || r.HasObj != w.hasObj || (w.hasObj && r.Obj != w.obj) || (r.Err != "") != w.failed {
			t.Fatalf("record %d = %+v, want %+v", i, r, w)
		}
		if w.in != nil {
			if !bytes.Equal(r.In, w.in) || !bytes.Equal(r.Out, w.out) {
				t.Fatalf("record %d: bytes differ", i)
			}
			if op := prm.CmdOp(prm.CmdIn.Opcode.Get(w.in)); r.Op != op.String() {
				t.Fatalf("record %d: op %s, want %s", i, r.Op, op)
			}
			if (r.Status != "") != w.status {
				t.Fatalf("record %d: status %q, want one: %v", i, r.Status, w.status)
			}
		}
		if w.call == "destroy" && !strings.HasPrefix(r.Op, "DESTROY_") && r.Op != "DELETE_FLOW_TABLE_ENTRY" && r.Op != "" {
			t.Fatalf("record %d: destroy named %s", i, r.Op)
		}
	}
	// And the text itself re-encodes to the same lines.
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, r := range recs {
		if r.String() != lines[i] {
			t.Fatalf("line %d does not re-encode:\n%s\n%s", i+1, lines[i], r.String())
		}
	}
	t.Logf("%d records, %d bytes", len(recs), buf.Len())
}

// TestParseRejects: every kind of damage is an error naming what is wrong.
func TestParseRejects(t *testing.T) {
	in := make([]byte, 16)
	prm.CmdIn.Opcode.Set(in, uint64(prm.CmdOpCreateCQ))
	out := make([]byte, 16)
	prm.GeneralObjOutCmdHdr.ObjID.Set(out, 9)
	var buf bytes.Buffer
	tc := Wrap(&fake{name: "f"}, NewSink(&buf))
	if _, err := tc.Create(in, out); err != nil {
		t.Fatal(err)
	}
	good := strings.TrimSuffix(buf.String(), "\n")
	if _, err := Decode(strings.NewReader("# comment\n\n" + good + "\n")); err != nil {
		t.Fatalf("good line: %v", err)
	}
	cases := []struct{ line, want string }{
		{"", "not a mlx5trace/1 record"},
		{strings.Replace(good, "mlx5trace/1", "mlx5trace/2", 1), "not a mlx5trace/1"},
		{strings.Replace(good, " ch=f", "", 1), "want ch="},
		{strings.Replace(good, "call=create", "call=explode", 1), "unknown kind"},
		{strings.Replace(good, "opcode=0x400", "opcode=0x401", 1), "op CREATE_CQ, but opcode 0x401 is DESTROY_CQ"},
		{strings.Replace(good, "op=CREATE_CQ opcode=0x400", "op=DESTROY_CQ opcode=0x401", 1), "the input starts with 0x400"},
		{strings.Replace(good, "status=OK", "status=BAD_PARAM_ERR", 1), "the output holds OK"},
		{strings.Replace(good, "syndrome=0x", "syndrome=0x1", 1), "syndrome"},
		{strings.Replace(good, "in=04", "in=4", 1), "in:"},
		{strings.Replace(good, "out=", "out=zz", 1), "out:"},
		{strings.Replace(good, "seq=1", "seq=x", 1), "seq"},
		{regexp.MustCompile(`obj=\d+`).ReplaceAllString(good, "obj=-"), "without an object id"},
		{good + " extra=1", "trailing"},
		{good[:len(good)/2], ""},
		{strings.Replace(good, "err=-", `err="unterminated`, 1), "err:"},
	}
	for _, c := range cases {
		_, err := Decode(strings.NewReader(c.line + "\n"))
		if c.line == "" {
			_, err = Parse(c.line)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", truncate(c.line, 60), err, c.want)
		}
	}
}

// TestConcurrentAndShared: channels sharing a file through WrapEnv from many goroutines
// write whole lines, numbered without gaps per sink.
func TestConcurrentAndShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.trace")
	t.Setenv(EnvVar, path)
	var chans []channel.Channel
	for i := range 2 {
		c, err := WrapEnv(&fake{name: fmt.Sprintf("model:%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*Channel); !ok {
			t.Fatalf("WrapEnv with %s set returned %T", EnvVar, c)
		}
		chans = append(chans, c)
	}
	const per = 200
	var wg sync.WaitGroup
	for _, c := range chans {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					in, out := randCmd(64), make([]byte, 64)
					c.Exec(in, out)
				}
			}()
		}
	}
	wg.Wait()
	for _, c := range chans {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[string]map[uint64]bool{}
	for _, r := range recs {
		if seqs[r.Channel] == nil {
			seqs[r.Channel] = map[uint64]bool{}
		}
		seqs[r.Channel][r.Seq] = true
	}
	for name, s := range seqs {
		for i := uint64(1); i <= 4*per+1; i++ {
			if !s[i] {
				t.Fatalf("%s: record %d missing", name, i)
			}
		}
	}
	if len(recs) != 2*(4*per+1) {
		t.Fatalf("%d records, want %d", len(recs), 2*(4*per+1))
	}

	t.Setenv(EnvVar, "")
	plain := &fake{name: "p"}
	if c, err := WrapEnv(plain); err != nil || c != channel.Channel(plain) {
		t.Errorf("WrapEnv without %s = %T %v, want the channel itself", EnvVar, c, err)
	}
	t.Setenv(EnvVar, filepath.Join(t.TempDir(), "no", "such", "dir", "x"))
	if _, err := WrapEnv(plain); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Errorf("WrapEnv into a missing folder = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestSinkErrorDoesNotFailCommands: tracing never changes what the channel answers.
func TestSinkErrorDoesNotFailCommands(t *testing.T) {
	s := NewSink(failWriter{})
	tc := Wrap(&fake{name: "f"}, s)
	in, out := randCmd(16), make([]byte, 16)
	in[15] = 0
	if err := tc.Exec(in, out); err != nil {
		t.Fatalf("Exec with a failing sink: %v", err)
	}
	if s.Err() == nil || s.Close() == nil {
		t.Error("the sink's write error was lost")
	}
}

func TestOpModNames(t *testing.T) {
	cases := []struct {
		op    prm.CmdOp
		mod   uint16
		wants string
	}{
		{prm.CmdOpQueryHCACap, uint16(prm.CapTypeFlowTable)<<1 | 1, "FLOW_TABLE/cur"},
		{prm.CmdOpQueryHCACap, 0, "GENERAL/max"},
		{prm.CmdOpSetHCACap, uint16(prm.CapTypeQoS) << 1, "QOS"},
		{prm.CmdOpManagePages, prm.ManagePagesGive, "GIVE"},
		{prm.CmdOpQueryPages, prm.QueryPagesInit, "INIT"},
		{prm.CmdOpSetFlowTableEntry, 1, "MODIFY"},
		{prm.CmdOpCreateCQ, 0, ""},
	}
	for _, c := range cases {
		if got := OpModName(uint16(c.op), c.mod); got != c.wants {
			t.Errorf("OpModName(%v, %#x) = %q, want %q", c.op, c.mod, got, c.wants)
		}
	}
}

type pacerFake struct{ fake }

type fakePacing struct{ idx uint16 }

func (p fakePacing) Index() uint16  { return p.idx }
func (p fakePacing) Release() error { return nil }

func (p *pacerFake) RegisterDMABuf(fd int, offset, length uint64, _ channel.Access) (channel.UMEM, error) {
	return fakeUMEM{uint32(length)}, nil
}

func (p *pacerFake) AllocPacing(ctx []byte, dedicated bool) (channel.Pacing, error) {
	if len(ctx) == 0 {
		return nil, errors.New("empty context")
	}
	return fakePacing{uint16(len(ctx))}, nil
}

// TestPacing: a traced Pacer allocates through the traced channel and both calls are
// recorded; a traced channel without pacing answers ErrUnsupported, records nothing.
func TestPacing(t *testing.T) {
	var buf bytes.Buffer
	tc := Wrap(&pacerFake{fake{name: "devx:x"}}, NewSink(&buf))
	ctx := make([]byte, 48)
	ctx[3] = 0x10
	p, err := tc.AllocPacing(ctx, true)
	if err != nil || p.Index() != 48 {
		t.Fatalf("AllocPacing = %v, %v", p, err)
	}
	if _, err := tc.AllocPacing(nil, false); err == nil {
		t.Fatal("empty context accepted")
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	recs, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Call != "pp_alloc" || recs[0].Obj != 48 || !bytes.Equal(recs[0].In, ctx) || recs[0].Arg != "dedicated:true" ||
		recs[1].Err != "empty context" || recs[2].Call != "pp_release" || recs[2].Obj != 48 {
		t.Fatalf("records %+v", recs)
	}
	// A channel name with white space still makes one token.
	var sp bytes.Buffer
	odd := Wrap(&fake{name: "model:0@veth a"}, NewSink(&sp))
	odd.EQN(1)
	if recs, err := Decode(&sp); err != nil || len(recs) != 1 || recs[0].Channel != "model:0@veth_a" {
		t.Errorf("odd channel name: %+v %v", recs, err)
	}
	var dm bytes.Buffer
	dtc := Wrap(&pacerFake{fake{name: "devx:x"}}, NewSink(&dm))
	if u, err := dtc.RegisterDMABuf(9, 0x1000, 1<<20, channel.AccessLocalWrite); err != nil || u.ID() != 1<<20 {
		t.Fatalf("RegisterDMABuf = %v, %v", u, err)
	}
	if recs, err := Decode(&dm); err != nil || len(recs) != 1 || recs[0].Arg != "dmabuf_fd:9,offset:0x1000,bytes:1048576,access:0x1" {
		t.Errorf("DMA-BUF record %+v %v", recs, err)
	}
	if _, err := Wrap(&fake{name: "model:0"}, NewSink(&dm)).RegisterDMABuf(9, 0, 1, 0); !errors.Is(err, channel.ErrUnsupported) {
		t.Errorf("RegisterDMABuf without support = %v", err)
	}
	var none bytes.Buffer
	if _, err := Wrap(&fake{name: "model:0"}, NewSink(&none)).AllocPacing(ctx, false); !errors.Is(err, channel.ErrUnsupported) || none.Len() != 0 {
		t.Errorf("AllocPacing without a Pacer = %v (%d bytes traced), want ErrUnsupported", err, none.Len())
	}
}

// FuzzParse: no line makes the decoder panic, and a line it accepts re-encodes to itself.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	tc := Wrap(&fake{name: "model:0"}, NewSink(&buf))
	in, out := randCmd(24), make([]byte, 24)
	in[15] = 1
	tc.Exec(in, out)
	tc.EQN(2)
	tc.Create(randCmd(16), make([]byte, 16))
	for _, l := range strings.Split(buf.String(), "\n") {
		f.Add(l)
	}
	f.Add("mlx5trace/1 seq=1")
	f.Fuzz(func(t *testing.T, line string) {
		r, err := Parse(line)
		if err != nil {
			return
		}
		Check(r)
		if err == nil && Check(r) == nil && !strings.Contains(line, "\\") {
			if again, err := Parse(r.String()); err != nil || again.String() != r.String() {
				t.Fatalf("accepted %q but its re-encoding %q does not parse the same: %v", line, r.String(), err)
			}
		}
	})
}
