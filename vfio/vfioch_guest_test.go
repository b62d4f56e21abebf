package vfio_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/mlx5/channel/vfioch"
	"github.com/daqiri-go/daqiri/vfio"
)

// TestVFIOChannelOnEdu runs, inside the VM of integration/vm, the real side of the mlx5 VFIO
// transport (vfioch.OpenPCI: this package's container, group, device and BAR mapping behind
// vfioch.Function) on qemu's edu device, the one PCI function the project can bind to
// vfio-pci. Everything up to the ConnectX-specific part runs for real: the binding check,
// BAR0, the IOMMU's ranges, DMA mapping, bus mastering; then vfioch.Open must refuse the
// device at the command interface revision check with a clear error and release it so that
// it can be opened again. The ConnectX part is tested against the model (package vfioch).
func TestVFIOChannelOnEdu(t *testing.T) {
	bdf, _ := guest.Edu(t)
	if err := vfioch.CheckBound(bdf); err != nil {
		t.Fatalf("CheckBound(%s) of the harness's vfio-pci device: %v", bdf, err)
	}
	if err := vfioch.CheckBound("0000:ff:1f.7"); err == nil {
		t.Error("CheckBound of an absent function succeeded")
	}
	fn, err := vfioch.OpenPCI(bdf)
	if err != nil {
		t.Fatalf("OpenPCI(%s): %v", bdf, err)
	}
	if fn.Name() != bdf || fn.BAR0().Len() != 1<<20 {
		t.Errorf("function %q with a BAR0 of %d bytes, want %s and 1 MiB (edu)", fn.Name(), fn.BAR0().Len(), bdf)
	}
	// edu's identification register: 0x010000ed (qemu hw/misc/edu.c), native order as loaded.
	if id := fn.BAR0().Read32(0); id != 0x010000ed {
		t.Errorf("edu identification %#x through vfioch.Region", id)
	}
	info, err := fn.DMA().IOMMUInfo()
	if err != nil || info.MinPageSize() == 0 {
		t.Fatalf("IOMMU info through vfioch.DMA: %+v, %v", info, err)
	}
	if err := fn.EnableBusMaster(); err != nil {
		t.Fatalf("EnableBusMaster: %v", err)
	}
	// edu has MSI, not MSI-X: the error is vfio's, naming what is missing.
	if _, err := fn.EnableMSIX(1); !errors.Is(err, vfio.ErrUnsupported) {
		t.Errorf("EnableMSIX on edu: %v, want ErrUnsupported", err)
	}
	opts := vfioch.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), CommandTimeout: time.Second}
	_, err = vfioch.Open(fn, opts) // closes fn on failure
	if !errors.Is(err, vfioch.ErrUnsupportedDevice) || !strings.Contains(err.Error(), "command interface revision") {
		t.Fatalf("vfioch.Open on edu: %v, want ErrUnsupportedDevice at the revision check", err)
	}
	t.Log(err)
	// Everything was released: the group opens again.
	fn, err = vfioch.OpenPCI(bdf)
	if err != nil {
		t.Fatalf("OpenPCI after the refused Open: %v", err)
	}
	if err := fn.Close(); err != nil {
		t.Fatal(err)
	}
}
