package vfiomodel

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/hugepage"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/vfio"
)

// TestDMA: the adapter checks mappings as VFIO_IOMMU_MAP_DMA/UNMAP_DMA do, and the device
// reaches what is mapped.
func TestDMA(t *testing.T) {
	f := New(model.Config{}, "vfio+model:0", []vfio.IOVARange{{Start: 0x10000, End: 0x1ffff}})
	m, err := hugepage.Map(8192, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d := f.DMA()
	info, _ := d.IOMMUInfo()
	if info.MinPageSize() != 4096 || len(info.IOVARanges) != 1 {
		t.Errorf("IOMMU info %+v", info)
	}
	for _, c := range []struct {
		mem  []byte
		iova uint64
		perm vfio.Perm
		want error
	}{
		{m.Bytes()[:100], 0x10000, vfio.DeviceReadWrite, vfio.ErrInvalid}, // not whole pages
		{m.Bytes(), 0x10800, vfio.DeviceReadWrite, vfio.ErrInvalid},       // iova not aligned
		{m.Bytes(), 0x1f000, vfio.DeviceReadWrite, vfio.ErrInvalid},       // past the range
		{m.Bytes(), 0x10000, 0, vfio.ErrInvalid},                          // no permission
		{m.Bytes(), 0x10000, vfio.DeviceReadWrite, nil},                   // fine
		{m.Bytes()[4096:], 0x11000, vfio.DeviceReadWrite, vfio.ErrExists}, // overlaps
	} {
		if err := d.MapDMA(c.mem, c.iova, c.perm); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("MapDMA(%d bytes, %#x, %v) = %v, want %v", len(c.mem), c.iova, c.perm, err, c.want)
		}
	}
	copy(m.Bytes()[4096:], "hello")
	got := make([]byte, 5)
	if err := f.Device().DMA().Read(0x11000, got); err != nil || string(got) != "hello" {
		t.Errorf("device read %q, %v", got, err)
	}
	if err := d.UnmapDMA(0x10000, 4096); !errors.Is(err, vfio.ErrInvalid) {
		t.Errorf("unmap with the wrong size: %v", err)
	}
	if err := d.UnmapDMA(0x12000, 4096); !errors.Is(err, vfio.ErrNotMapped) {
		t.Errorf("unmap of nothing: %v", err)
	}
	if f.Mapped() != 1 {
		t.Errorf("%d mappings", f.Mapped())
	}
	f.Close()
	if f.LeftMapped() != 1 || f.Mapped() != 0 || f.Device().DMA().Len() != 0 {
		t.Errorf("close: %d left, %d mapped, %d in the device", f.LeftMapped(), f.Mapped(), f.Device().DMA().Len())
	}
	if err := d.MapDMA(m.Bytes(), 0x10000, vfio.DeviceRead); !errors.Is(err, vfio.ErrClosed) {
		t.Errorf("map after close: %v", err)
	}
}

// TestInterrupts: vector 0 counts the model's interrupts like an eventfd; Wait times out
// with vfio.ErrTimeout, dropped interrupts are counted, and only one vector exists.
func TestInterrupts(t *testing.T) {
	f := New(model.Config{}, "vfio+model:0", nil)
	if _, err := f.EnableMSIX(2); !errors.Is(err, vfio.ErrInvalid) {
		t.Errorf("two vectors: %v", err)
	}
	q, err := f.EnableMSIX(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.EnableMSIX(1); !errors.Is(err, vfio.ErrInUse) {
		t.Errorf("enabled twice: %v", err)
	}
	if _, err := q.Wait(0, time.Millisecond); !errors.Is(err, vfio.ErrTimeout) {
		t.Errorf("wait without an interrupt: %v", err)
	}
	f.raise(0)
	f.raise(0)
	if n, err := q.Wait(0, time.Second); n != 2 || err != nil {
		t.Errorf("two interrupts: %d, %v", n, err)
	}
	f.DropInterrupts(true)
	f.raise(0)
	if f.DroppedInterrupts() != 1 {
		t.Errorf("dropped %d", f.DroppedInterrupts())
	}
	if _, err := q.Wait(1, time.Millisecond); !errors.Is(err, vfio.ErrInvalid) {
		t.Errorf("vector 1: %v", err)
	}
	q.Close()
	if _, err := q.Wait(0, time.Millisecond); !errors.Is(err, vfio.ErrClosed) {
		t.Errorf("wait after close: %v", err)
	}
}

// TestBAR: registers read in native order as a CPU load gives them, the doorbell does nothing
// before bus mastering, and a removed function reads all ones.
func TestBAR(t *testing.T) {
	f := New(model.Config{}, "vfio+model:0", nil)
	bar := f.BAR0()
	var be [4]byte
	// cmdif_rev_fw_sub: the revision in the upper 16 bits of the big-endian word.
	v := bar.Read32(prm.InitSeg.CmdifRevFWSub.ByteOff())
	binary.NativeEndian.PutUint32(be[:], v) // the bytes as the BAR holds them
	if rev := binary.BigEndian.Uint32(be[:]) >> 16; rev != prm.CmdIfRev {
		t.Errorf("cmdif revision %d through the region", rev)
	}
	bar.Write32(prm.InitSeg.CmdDbell.ByteOff(), 1)
	if len(f.Commands()) != 0 {
		t.Error("a doorbell before bus mastering ran a command")
	}
	f.SurpriseRemove(true)
	if bar.Read32(0) != 0xffffffff {
		t.Error("a removed function does not read all ones")
	}
	defer func() {
		if recover() == nil {
			t.Error("a misaligned access did not panic")
		}
	}()
	bar.Read32(2)
}
