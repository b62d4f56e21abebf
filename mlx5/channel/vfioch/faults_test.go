package vfioch_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/vfiomodel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/vfio"
)

// hangGuard bounds a wait that must end by itself; it is a guard against a hang, not a
// timing assertion.
const hangGuard = 20 * time.Second

func waitFor(t *testing.T, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			var s []string
			for _, f := range state {
				s = append(s, f())
			}
			t.Fatalf("%s: not within %v %s", what, hangGuard, strings.Join(s, "; "))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCommandTimeout(t *testing.T) {
	opts := testOpts()
	opts.CommandTimeout = 100 * time.Millisecond
	ch, f := open(t, model.Config{}, opts)
	f.DropDoorbells(true)
	err := ch.Exec(cmd(prm.CmdOpQueryISSI, 16), make([]byte, 0x70))
	if !errors.Is(err, vfioch.ErrCommandTimeout) || !strings.Contains(err.Error(), "QUERY_ISSI") {
		t.Fatalf("hung command: %v, want ErrCommandTimeout naming QUERY_ISSI", err)
	}
	t.Log(err)
	f.DropDoorbells(false)
	if err := ch.Exec(cmd(prm.CmdOpQueryISSI, 16), make([]byte, 0x70)); err != nil {
		t.Fatalf("after the hang: %v", err)
	}
	if s := ch.Stats(); s.RetiredSlots != 1 {
		t.Errorf("retired slots %d, want 1", s.RetiredSlots)
	}
	closeClean(t, ch, f)
	checkCommands(t, f)
}

func TestBadStatusSyndrome(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	// Firmware's own refusal: a CQ larger than the capability allows.
	in := cmd(prm.CmdOpCreateCQ, prm.CreateCQIn.PAS.ByteOff()+8)
	prm.CQC.LogCQSize.At(prm.CreateCQIn.CQContext.Off).Set(in, 30)
	_, err := ch.Create(in, make([]byte, 16))
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Name != "CREATE_CQ" || ce.Status != uint8(prm.StatusBadParamErr) || ce.Syndrome != model.SyndromeBadParam {
		t.Fatalf("oversized CQ: %v, want CREATE_CQ BAD_PARAM with the model's syndrome", err)
	}
	t.Log(err)
	// An injected status on a command that would succeed.
	f.FailCommand(prm.CmdOpAllocPD, prm.StatusNoResErr, 0xdead01)
	_, err = ch.Create(cmd(prm.CmdOpAllocPD, 16), make([]byte, 16))
	if !errors.As(err, &ce) || ce.Name != "ALLOC_PD" || ce.Status != uint8(prm.StatusNoResErr) || ce.Syndrome != 0xdead01 || !strings.Contains(err.Error(), "0xdead01") {
		t.Fatalf("injected status: %v", err)
	}
	f.FailCommand(prm.CmdOpAllocPD, prm.StatusOK, 0)
	closeClean(t, ch, f)
	checkCommands(t, f, prm.CmdOpCreateCQ)
}

// TestBringUpFailure fails INIT_HCA: Open returns the command's error, and what bring-up did
// is undone (pages back, function disabled, nothing mapped); the function comes up after.
func TestBringUpFailure(t *testing.T) {
	f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", nil)
	f.FailCommand(prm.CmdOpInitHCA, prm.StatusBadResStateErr, 0x77)
	_, err := vfioch.Open(f, testOpts())
	var ce *channel.CommandError
	if !errors.As(err, &ce) || ce.Name != "INIT_HCA" || ce.Syndrome != 0x77 {
		t.Fatalf("open with INIT_HCA failing: %v", err)
	}
	t.Log(err)
	if n := f.LeftMapped(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
	all := ops(f.Commands())
	if tail := strings.Join(all[len(all)-3:], " "); tail != "MANAGE_PAGES MANAGE_PAGES DISABLE_HCA" {
		t.Errorf("after the failed bring-up: %v", tail)
	}
	f.FailCommand(prm.CmdOpInitHCA, prm.StatusOK, 0)
	f.Reopen()
	ch, err := vfioch.Open(f, testOpts())
	if err != nil {
		t.Fatalf("open after the failure: %v", err)
	}
	closeClean(t, ch, f)
}

// TestPageStorm sends storms of page requests (firmware asking for pages and giving them
// back), each burst back to back, and checks that the pages firmware holds follow every
// request, then that teardown takes all of them back. A burst stays within the async EQ's
// 128 entries with the completions of the MANAGE_PAGES commands it causes: beyond that the
// EQ would overrun, which firmware reports as a fatal health syndrome.
func TestPageStorm(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	r := rand.New(rand.NewPCG(1, 2))
	want := ch.GivenPages()
	const bursts, burst = 4, 40
	for k := range bursts {
		for range burst {
			n := int32(r.IntN(12) - 3)
			if n == 0 {
				n = 1
			}
			if want+int(n) < 0 {
				n = -n
			}
			want += int(n)
			if !f.Device().RequestPages(n) {
				t.Fatal("no EQ took the page request")
			}
		}
		waitFor(t, "pages follow the requests", func() bool { return ch.GivenPages() == want && ch.Stats().PageRequests == (k+1)*burst },
			func() string {
				return fmt.Sprintf("(given %d of %d, %d of %d requests seen; health %v; stats %+v)", ch.GivenPages(), want, ch.Stats().PageRequests, (k+1)*burst, ch.Health(), ch.Stats())
			})
	}
	// Firmware giving pages back: a burst of negative requests only.
	for range 10 {
		want -= 5
		f.Device().RequestPages(-5)
	}
	waitFor(t, "pages reclaimed", func() bool { return ch.GivenPages() == want && ch.Stats().PageRequests == bursts*burst+10 })
	if got := ch.Stats().PagesReclaimed; got < 50 {
		t.Errorf("%d pages reclaimed at firmware's request, want at least 50", got)
	}
	const storm = bursts*burst + 10
	out := make([]byte, 16)
	q := cmd(prm.CmdOpQueryPages, 16)
	prm.CmdIn.OpMod.Set(q, prm.QueryPagesRegular)
	if err := ch.Exec(q, out); err != nil {
		t.Fatal(err)
	}
	if n := int32(uint32(prm.QueryPagesOut.NumPages.Get(out))); n != 0 {
		t.Errorf("firmware still wants %d pages", n)
	}
	s := ch.Stats()
	t.Logf("%d requests, firmware holds %d pages; given %d, reclaimed %d", s.PageRequests, want, s.PagesGiven, s.PagesReclaimed)
	closeClean(t, ch, f)
	if s := ch.Stats(); s.PagesGiven != s.PagesReclaimed || s.PageErrors != 0 {
		t.Errorf("pages given %d, reclaimed %d, errors %d", s.PagesGiven, s.PagesReclaimed, s.PageErrors)
	}
	checkCommands(t, f)
}

// TestPagesLimit: firmware asking for more than the channel may give gets MANAGE_PAGES
// "cannot give", and the channel stays usable.
func TestPagesLimit(t *testing.T) {
	opts := testOpts()
	opts.MaxPages = 512
	ch, f := open(t, model.Config{}, opts)
	f.Device().RequestPages(1000)
	waitFor(t, "the refused page request", func() bool { return ch.Stats().PageErrors == 1 })
	cmds := f.Commands()
	if last := cmds[len(cmds)-1]; last.Op != prm.CmdOpManagePages || last.OpMod != prm.ManagePagesCantGive {
		t.Errorf("last command %v op_mod %d, want MANAGE_PAGES cannot-give", last.Op, last.OpMod)
	}
	closeClean(t, ch, f)
}

func TestInterruptNeverArrives(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	f.DropInterrupts(true)
	before := ch.Stats()
	for range 20 {
		if err := ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
	}
	// The first command finds its completion by reading the ownership bit; from then on
	// the event loop polls the EQ, so later ones see their completion events that way or
	// read the bit themselves, whichever comes first.
	s := ch.Stats()
	if s.ByPolling == before.ByPolling || s.Commands-before.Commands != 20 || f.DroppedInterrupts() == 0 {
		t.Fatalf("with interrupts lost: %d commands, %d found by polling, %d interrupts dropped", s.Commands-before.Commands, s.ByPolling-before.ByPolling, f.DroppedInterrupts())
	}
	t.Logf("20 commands without interrupts: %d by polling the entry, %d through the polled EQ; %d interrupts lost", s.ByPolling-before.ByPolling, s.ByEvent-before.ByEvent, f.DroppedInterrupts())
	// Page requests are still served: the event loop now polls the EQ.
	want := ch.GivenPages() + 7
	f.Device().RequestPages(7)
	waitFor(t, "page request without interrupts", func() bool { return ch.GivenPages() == want })
	closeClean(t, ch, f)
	checkCommands(t, f)
}

// TestHealthFailure covers each health sensor during traffic: every command fails with the
// device's failure from then on, OnFailure is called once, nothing hangs and Close releases
// all host memory.
func TestHealthFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		realtime bool
		inject   func(f *vfiomodel.Function)
		want     string
	}{
		{"syndrome", true, func(f *vfiomodel.Function) { f.Device().Fail(0x1) }, "fatal health syndrome 0x1"},
		{"stalled counter", false, func(*vfiomodel.Function) {}, "health counter stalled"},
		{"software reset", true, func(f *vfiomodel.Function) { setNICState(f, 7) }, "software reset"},
		{"nic disabled", true, func(f *vfiomodel.Function) { setNICState(f, 1) }, "NIC interface disabled"},
		{"surprise removal", true, func(f *vfiomodel.Function) { f.SurpriseRemove(true) }, "all ones"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			opts := testOpts()
			opts.OnFailure = func(error) { calls.Add(1) }
			f := vfiomodel.New(model.Config{Realtime: tc.realtime}, "vfio+model:0", nil)
			ch, err := vfioch.Open(f, opts)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := hugepage.Map(1<<20, false)
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			if _, err := ch.RegisterMemory(mem.Bytes(), channel.AccessLocalWrite); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { // traffic until the failure
				for i := 0; i < 1_000_000; i++ {
					if err := ch.Exec(cmd(prm.CmdOpQueryVportState, 16), make([]byte, 16)); errors.Is(err, vfioch.ErrDeviceFailed) {
						errc <- err
						return
					}
					if i == 50 {
						tc.inject(f)
					}
				}
				errc <- errors.New("no failure seen")
			}()
			var got error
			select {
			case got = <-errc:
			case <-time.After(hangGuard):
				t.Fatal("traffic never saw the failure")
			}
			if !strings.Contains(got.Error(), tc.want) {
				t.Fatalf("failure %q, want it to say %q", got, tc.want)
			}
			t.Log(got)
			<-ch.Failed()
			if _, err := ch.AllocUAR(); !errors.Is(err, vfioch.ErrDeviceFailed) {
				t.Errorf("AllocUAR after the failure: %v", err)
			}
			if err := ch.Close(); err != nil {
				t.Fatalf("close of a failed device: %v", err)
			}
			if calls.Load() != 1 {
				t.Errorf("OnFailure called %d times", calls.Load())
			}
			if n := f.LeftMapped(); n != 0 {
				t.Errorf("%d mappings left", n)
			}
		})
	}
}

// setNICState writes the NIC interface state into the init segment as firmware would.
func setNICState(f *vfiomodel.Function, st uint32) {
	bar := f.Device().BAR0()
	var b [4]byte
	off := int64(prm.InitSeg.CmdqAddrLSz.ByteOff())
	bar.ReadAt(b[:], off)
	v := binary.BigEndian.Uint32(b[:])&^(7<<8) | st<<8
	binary.BigEndian.PutUint32(b[:], v)
	bar.WriteAt(b[:], off)
}

func TestSurpriseRemovalAtOpen(t *testing.T) {
	f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", nil)
	f.SurpriseRemove(true)
	_, err := vfioch.Open(f, testOpts())
	if !errors.Is(err, vfioch.ErrDeviceFailed) || !strings.Contains(err.Error(), "all ones") {
		t.Fatalf("open of a removed function: %v", err)
	}
	if n := f.LeftMapped(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
}

func TestNotAConnectX(t *testing.T) {
	f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", nil)
	// A BAR whose cmdif revision is not 5 (qemu's edu device reads 0 there, for example).
	bar := f.Device().BAR0()
	_ = bar
	_, err := vfioch.Open(wrongRev{f}, testOpts())
	if !errors.Is(err, vfioch.ErrUnsupportedDevice) || !strings.Contains(err.Error(), "revision 0") {
		t.Fatalf("open of a non-ConnectX: %v", err)
	}
}

type wrongRev struct{ *vfiomodel.Function }

func (w wrongRev) BAR0() vfioch.Region { return zeroRev{w.Function.BAR0()} }

type zeroRev struct{ vfioch.Region }

func (z zeroRev) Read32(off int) uint32 {
	if off == prm.InitSeg.CmdifRevFWSub.ByteOff() {
		return 0
	}
	return z.Region.Read32(off)
}

// TestIOVARanges: the channel's memory goes where the container says IOVAs are usable, and
// a space too small for it is a clear error.
func TestIOVARanges(t *testing.T) {
	ranges := []vfio.IOVARange{{Start: 0x4000_0000, End: 0x40ff_ffff}, {Start: 1 << 44, End: 1<<48 - 1}}
	f := vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", ranges)
	ch, err := vfioch.Open(f, testOpts())
	if err != nil {
		t.Fatalf("open in a 16 MiB window: %v", err)
	}
	closeClean(t, ch, f)
	f = vfiomodel.New(model.Config{Realtime: true}, "vfio+model:0", []vfio.IOVARange{{Start: 0x4000_0000, End: 0x401f_ffff}})
	_, err = vfioch.Open(f, testOpts())
	if err == nil || !strings.Contains(err.Error(), "no IOVA space left") {
		t.Fatalf("open in a 2 MiB window: %v", err)
	}
	if n := f.LeftMapped(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
}

// TestFastTeardownFails: when the prepare-fast TEARDOWN_HCA fails, Close tears down
// gracefully and still takes every page back.
func TestFastTeardownFails(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	f.FailCommandN(prm.CmdOpTeardownHCA, prm.StatusBadSysStateErr, 0x42, 1)
	closeClean(t, ch, f)
	var tds []string
	for _, c := range f.Commands() {
		if c.Op == prm.CmdOpTeardownHCA {
			tds = append(tds, fmt.Sprintf("injected=%v status=%v", c.Injected, c.Status))
		}
	}
	if len(tds) != 2 || tds[1] != "injected=false status=OK" {
		t.Errorf("TEARDOWN_HCA commands: %v, want the failed fast one then a graceful one", tds)
	}
	checkCommands(t, f)
}

// TestDeliveryError: a command the device cannot carry fails with ErrDelivery naming the
// command and the delivery status, and the channel goes on.
func TestDeliveryError(t *testing.T) {
	ch, f := open(t, model.Config{}, testOpts())
	f.FailDelivery(prm.CmdOpQueryISSI, prm.DeliveryTokenErr)
	err := ch.Exec(cmd(prm.CmdOpQueryISSI, 16), make([]byte, 0x70))
	if !errors.Is(err, vfioch.ErrDelivery) || !strings.Contains(err.Error(), "QUERY_ISSI") || !strings.Contains(err.Error(), "token error") {
		t.Fatalf("undeliverable command: %v", err)
	}
	t.Log(err)
	f.FailDelivery(prm.CmdOpQueryISSI, prm.DeliveryOK)
	if err := ch.Exec(cmd(prm.CmdOpQueryISSI, 16), make([]byte, 0x70)); err != nil {
		t.Fatal(err)
	}
	closeClean(t, ch, f)
}

// TestFirmwareNeverInitializes: the initializing bit never clears; Open gives up after
// InitTimeout with nothing left mapped.
func TestFirmwareNeverInitializes(t *testing.T) {
	f := vfiomodel.New(model.Config{Realtime: true, InitializingReads: 1 << 30}, "vfio+model:0", nil)
	opts := testOpts()
	opts.InitTimeout = 50 * time.Millisecond
	_, err := vfioch.Open(f, opts)
	if !errors.Is(err, vfioch.ErrCommandTimeout) || !strings.Contains(err.Error(), "initializing") {
		t.Fatalf("open of firmware that never initializes: %v", err)
	}
	if n := f.LeftMapped(); n != 0 {
		t.Errorf("%d mappings left", n)
	}
}

// TestCheckBound: a function that does not exist, and one bound to another driver (when the
// machine has one), are refused with what to do.
func TestCheckBound(t *testing.T) {
	if err := vfioch.CheckBound("0000:ff:1f.7"); err == nil {
		t.Error("CheckBound of an absent function succeeded")
	}
	ents, _ := os.ReadDir("/sys/bus/pci/devices")
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", e.Name(), "driver"))
		if err != nil || filepath.Base(l) == "vfio-pci" {
			continue
		}
		err = vfioch.CheckBound(e.Name())
		if !errors.Is(err, vfioch.ErrNotBound) || !strings.Contains(err.Error(), filepath.Base(l)) || !strings.Contains(err.Error(), "driver_override") {
			t.Fatalf("CheckBound(%s) bound to %s: %v", e.Name(), filepath.Base(l), err)
		}
		t.Log(err)
		return
	}
	t.Log("no PCI function bound to a driver other than vfio-pci here; only the absent case ran")
}
