package vfioch_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// testOpts are short timeouts so that fault tests end quickly; the health interval stays
// above the model's 100 ms health counter period.
func testOpts() vfioch.Options {
	return vfioch.Options{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// Generous: a loaded 2-core CI machine can hold a goroutine off the CPU for
		// seconds; the tests of timeouts set their own.
		CommandTimeout: 10 * time.Second,
		PollInterval:   5 * time.Millisecond,
		HealthInterval: 200 * time.Millisecond,
	}
}

func open(t *testing.T, cfg model.Config, opts vfioch.Options) (*vfioch.Channel, *vfiomodel.Function) {
	t.Helper()
	cfg.Realtime = true
	f := vfiomodel.New(cfg, "vfio+model:0", nil)
	ch, err := vfioch.Open(f, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return ch, f
}

// checkCommands asserts that the model executed every command the channel sent with status
// OK, except those listed as allowed to fail.
func checkCommands(t *testing.T, f *vfiomodel.Function, allowed ...prm.CmdOp) {
	t.Helper()
	for _, c := range f.Commands() {
		if c.Injected {
			continue
		}
		if c.Delivery != prm.DeliveryOK {
			t.Errorf("%v: delivery status %#x", c.Op, c.Delivery)
		}
		if c.Status != prm.StatusOK && !c.Injected && !slicesContains(allowed, c.Op) {
			t.Errorf("%v op_mod %#x: status %v", c.Op, c.OpMod, c.Status)
		}
	}
}

func slicesContains(s []prm.CmdOp, op prm.CmdOp) bool {
	for _, x := range s {
		if x == op {
			return true
		}
	}
	return false
}

// closeClean closes the channel and checks that nothing is left: no DMA mapping, every page
// taken back from firmware.
func closeClean(t *testing.T, ch *vfioch.Channel, f *vfiomodel.Function) {
	t.Helper()
	if err := ch.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := f.LeftMapped(); n != 0 {
		t.Errorf("%d DMA mappings left at close", n)
	}
	if n := ch.GivenPages(); n != 0 && ch.Health() == nil {
		t.Errorf("firmware still holds %d pages", n)
	}
	if n := f.Mapped(); n != 0 {
		t.Errorf("%d DMA mappings after close", n)
	}
}

func ops(cmds []vfiomodel.Command) []string {
	var s []string
	for _, c := range cmds {
		s = append(s, c.Op.String())
	}
	return s
}

// TestBringUpObjectsTeardown brings the model up through the command queue in
// mlx5_vfio.c's order, creates objects of every kind the engine uses, tears down and brings
// the same function up again.
func TestBringUpObjectsTeardown(t *testing.T) {
	cfg := model.Config{Realtime: true}
	f := vfiomodel.New(cfg, "vfio+model:0", nil)
	ch, err := vfioch.Open(f, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ENABLE_HCA", "QUERY_ISSI", "SET_ISSI", "QUERY_PAGES", "MANAGE_PAGES", "ACCESS_REG",
		"QUERY_HCA_CAP", "QUERY_HCA_CAP", "SET_HCA_CAP", "QUERY_PAGES", "MANAGE_PAGES", "INIT_HCA",
		"QUERY_NIC_VPORT_CONTEXT", "ALLOC_UAR", "CREATE_EQ", "ALLOC_UAR", "CREATE_EQ"}
	if got := ops(f.Commands()); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("bring-up commands\n got %v\nwant %v", got, want)
	}
	if ch.MAC().String() != "02:00:00:00:00:01" || ch.MTU() != 1522 {
		t.Errorf("vport: MAC %v MTU %d", ch.MAC(), ch.MTU())
	}
	if s := ch.Stats(); s.PagesGiven != 32+64 || s.ByEvent != 2 || s.ByPolling != 15 {
		// Polling up to the async EQ; its ALLOC_UAR and CREATE_EQ by event after.
		t.Errorf("stats after bring-up: %+v", s)
	}
	objects(t, ch)
	s := ch.Stats()
	if s.ByEvent < 10 || s.ByPolling > 20 {
		t.Errorf("completions by event %d, by polling %d: commands after the EQ should complete by event", s.ByEvent, s.ByPolling)
	}
	closeClean(t, ch, f)
	all := ops(f.Commands())
	tail := strings.Join(all[len(all)-8:], " ")
	if tail != "DESTROY_EQ DEALLOC_UAR DESTROY_EQ DEALLOC_UAR TEARDOWN_HCA MANAGE_PAGES MANAGE_PAGES DISABLE_HCA" {
		t.Errorf("teardown commands: %v", tail)
	}
	checkCommands(t, f)
	if s := ch.Stats(); s.PagesReclaimed != s.PagesGiven {
		t.Errorf("pages given %d, reclaimed %d", s.PagesGiven, s.PagesReclaimed)
	}

	// The function is reusable: a second driver brings it up from scratch.
	f.Reopen()
	ch2, err := vfioch.Open(f, testOpts())
	if err != nil {
		t.Fatalf("second bring-up: %v", err)
	}
	closeClean(t, ch2, f)
	checkCommands(t, f)
}

// objects creates one of each object kind through the channel and releases half of them by
// hand (the rest go with Close).
func objects(t *testing.T, ch *vfioch.Channel) {
	t.Helper()
	out := make([]byte, 16)
	pd, err := ch.Create(cmd(prm.CmdOpAllocPD, 16), out)
	if err != nil {
		t.Fatal(err)
	}
	td, err := ch.Create(cmd(prm.CmdOpAllocTransportDomain, 16), out)
	if err != nil {
		t.Fatal(err)
	}
	uar, err := ch.AllocUAR()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := hugepage.Map(1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	um, err := ch.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	// A CQ in the UMEM, on the channel's completion EQ, with a doorbell through the UAR.
	eqn, err := ch.EQN(0)
	if err != nil {
		t.Fatal(err)
	}
	base := prm.CreateCQIn.CQContext.Off
	in := cmd(prm.CmdOpCreateCQ, prm.CreateCQIn.PAS.ByteOff())
	q := prm.CQC
	q.LogCQSize.At(base).Set(in, 6)
	q.UARPage.At(base).Set(in, uint64(uar.Index()))
	q.CEQNOrApuElement.At(base).Set(in, uint64(eqn))
	q.LogPageSize.At(base).Set(in, 0)
	prm.CreateCQIn.CQUMEMValid.Set(in, 1)
	q.DbrUMEMValid.At(base).Set(in, 1)
	q.DbrUMEMID.At(base).Set(in, uint64(um.ID()))
	q.DbrAddr.At(base).Set(in, 0x8000)
	prm.CreateCQIn.CQUMEMID.Set(in, uint64(um.ID()))
	prm.CreateCQIn.CQUMEMOffset.Set(in, 0)
	cq, err := ch.Create(in, out)
	if err != nil {
		t.Fatalf("CREATE_CQ: %v", err)
	}
	uar.Write64(prm.UARCQDoorbell, uint64(cq.ID()))
	// A flow table attached at the root and detached again.
	ft := cmd(prm.CmdOpCreateFlowTable, 0x40)
	prm.CreateFlowTableIn.TableType.Set(ft, prm.FlowTableNICRX)
	prm.FlowTableContext.LogSize.At(prm.CreateFlowTableIn.FlowTableContext.Off).Set(ft, 4)
	tbl, err := ch.Create(ft, make([]byte, 16))
	if err != nil {
		t.Fatalf("CREATE_FLOW_TABLE: %v", err)
	}
	detach, err := ch.AttachRoot(tbl.ID())
	if err != nil {
		t.Fatalf("attach root: %v", err)
	}
	if err := detach(); err != nil {
		t.Fatalf("detach root: %v", err)
	}
	if err := detach(); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("second detach: %v", err)
	}
	// A large query through chained mailboxes both ways.
	qo := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
	if err := ch.Exec(cmd(prm.CmdOpQueryHCACap, 16), qo); err != nil {
		t.Fatal(err)
	}
	if prm.CmdHCACap.UMEMUID0.Get(prm.QueryHCACapOut.Capability.Slice(qo)) != 1 {
		t.Error("capabilities through the mailbox chain lost umem_uid_0")
	}
	qcq := cmd(prm.CmdOpQueryCQ, 16)
	prm.QueryCQIn.CQN.Set(qcq, uint64(cq.ID()))
	qout := make([]byte, prm.QueryCQOut.CQContext.End()/8)
	if err := cq.Query(qcq, qout); err != nil {
		t.Fatalf("QUERY_CQ through the object: %v", err)
	}
	if got := prm.CQC.UARPage.At(prm.QueryCQOut.CQContext.Off).Get(qout); got != uint64(uar.Index()) {
		t.Errorf("QUERY_CQ: uar_page %d, created with %d", got, uar.Index())
	}
	uar.Write32(prm.UAREQDoorbellUpdate, 0) // a 32-bit doorbell store through the BAR: no EQ on this page, ignored
	if _, err := ch.EQN(-1); err == nil {
		t.Error("EQN(-1) accepted")
	}
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := cq.Destroy(); !errors.Is(err, channel.ErrClosed) {
		t.Errorf("second destroy: %v", err)
	}
	if err := um.Release(); err != nil {
		t.Fatal(err)
	}
	_, _ = pd, td // released by Close
}

func cmd(op prm.CmdOp, n int) []byte {
	b := make([]byte, max(n, 16))
	prm.CmdIn.Opcode.Set(b, uint64(op))
	return b
}

// TestConcurrentCommands: goroutines share the queue's slots; every command completes with
// its own output (the capability page through 8 output mailboxes, the vport state inline).
func TestConcurrentCommands(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	before := ch.Stats().Commands
	const workers, each = 12, 40
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				if (w+i)%2 == 0 {
					qo := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
					if err := ch.Exec(cmd(prm.CmdOpQueryHCACap, 16), qo); err != nil {
						errc <- err
						return
					}
					if prm.CmdHCACap.UMEMUID0.Get(prm.QueryHCACapOut.Capability.Slice(qo)) != 1 {
						errc <- errors.New("capability page garbled")
						return
					}
				} else if err := ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16)); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if n := ch.Stats().Commands - before; n != workers*each {
		t.Errorf("%d commands completed, want %d", n, workers*each)
	}
	closeClean(t, ch, f)
	checkCommands(t, f)
}

// TestCloseUnderLoad closes the channel while goroutines keep sending commands: each
// command either completes or gets ErrClosed, Close returns, and nothing is left mapped.
func TestCloseUnderLoad(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	const workers = 6
	errc := make(chan error, workers)
	started := make(chan struct{}, workers)
	for range workers {
		go func() {
			for i := 0; i < 1_000_000; i++ {
				if i == 10 {
					started <- struct{}{}
				}
				err := ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16))
				if errors.Is(err, channel.ErrClosed) {
					errc <- nil
					return
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- errors.New("never saw the close")
		}()
	}
	for range workers {
		<-started
	}
	closeClean(t, ch, f)
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	checkCommands(t, f)
}
