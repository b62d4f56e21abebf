package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestModelTransport traces a model function through the model transport: a query, PD,
// transport domain, UMEM, UAR, EQN, a CQ created and destroyed, a CQ the device refuses,
// Close. The trace decodes with every record consistent, lists the creates in order with
// the ids the channel returned, and the refusal carries the device's status and syndrome.
func TestModelTransport(t *testing.T) {
	var buf bytes.Buffer
	sink := trace.NewSink(&buf)
	mc, err := modelch.Open(model.New(model.Config{}), "model:0")
	if err != nil {
		t.Fatal(err)
	}
	c := trace.Wrap(mc, sink)
	capOut := make([]byte, 16+4096)
	capIn := prm.NewCmdIn(prm.CmdOpQueryHCACap, 0, 16)
	prm.CmdIn.OpMod.Set(capIn, uint64(prm.CapTypeGeneral)<<1|prm.CapOpModCur)
	if err := c.Exec(capIn, capOut); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 16)
	pd, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16), out)
	if err != nil {
		t.Fatal(err)
	}
	td, err := c.Create(prm.NewCmdIn(prm.CmdOpAllocTransportDomain, 0, 16), out)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := hugepage.Map(1<<16, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	um, err := c.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	uar, err := c.AllocUAR()
	if err != nil {
		t.Fatal(err)
	}
	eqn, err := c.EQN(0)
	if err != nil {
		t.Fatal(err)
	}
	base := prm.CreateCQIn.CQContext.Off
	in := prm.NewCmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff()+8)
	prm.CQC.LogCQSize.At(base).Set(in, 6)
	prm.CQC.UARPage.At(base).Set(in, uint64(uar.Index()))
	prm.CQC.CEQNOrApuElement.At(base).Set(in, uint64(eqn))
	prm.CQC.DbrAddr.At(base).Set(in, uint64(mem.Addr())+0x8000)
	prm.CreateCQIn.PAS.Set(in, uint64(mem.Addr()))
	cq, err := c.Create(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
	prm.CreateCQIn.PAS.Set(in, 0x1000) // unmapped: refused
	_, err = c.Create(in, out)
	var ce *channel.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("CQ over unmapped memory: %v", err)
	}
	if err := um.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	recs, err := trace.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	want := []struct {
		call, op string
		obj      uint32
	}{
		{"exec", "QUERY_HCA_CAP", 0}, {"create", "ALLOC_PD", pd.ID()}, {"create", "ALLOC_TRANSPORT_DOMAIN", td.ID()},
		{"umem_reg", "", um.ID()}, {"uar_alloc", "", uar.Index()}, {"eqn", "", eqn},
		{"create", "CREATE_CQ", cq.ID()}, {"destroy", "DESTROY_CQ", cq.ID()}, {"create", "CREATE_CQ", 0},
		{"umem_release", "", um.ID()}, {"close", "", 0},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), buf.String())
	}
	for i, w := range want {
		r := recs[i]
		if r.Call != w.call || r.Op != w.op || r.Channel != "model:0" || (r.HasObj && r.Obj != w.obj) {
			t.Errorf("record %d: %s %s obj %d, want %s %s obj %d", i, r.Call, r.Op, r.Obj, w.call, w.op, w.obj)
		}
	}
	if r := recs[6]; r.Arg != fmt.Sprintf("eqn:%d,uar:%d", eqn, uar.Index()) {
		t.Errorf("CREATE_CQ refs %q, want its EQ and UAR", r.Arg)
	}
	if r := recs[0]; r.OpModName != "GENERAL/cur" || r.Status != "OK" || len(r.Out) != len(capOut) {
		t.Errorf("query record: op_mod_name %q status %q, %d output bytes", r.OpModName, r.Status, len(r.Out))
	}
	if r := recs[8]; r.Status != prm.Status(ce.Status).String() || r.Syndrome != ce.Syndrome || r.Err == "" || r.HasObj {
		t.Errorf("refused create: %+v, want status %#x syndrome %#x", r, ce.Status, ce.Syndrome)
	}
	t.Logf("%d records, %d bytes; e.g.\n%s", len(recs), buf.Len(), recs[2].String())
}
