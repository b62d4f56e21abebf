package mlx5_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/internal/testutil/gputest"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/gpudma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestHWReorderGPU is TestHWReorder with the batch buffers in GPU device memory: the device
// model reaches them through the DMA-BUF the allocation exports (mlx5/model/gpudma: the GPU's
// copy engine), places every frame at its slot there, and the test reads both buffers back
// with a device-to-host copy and compares them byte for byte. It skips without a GPU (CI);
// `make gpu-test`-style binaries run it on the GPU host.
func TestHWReorderGPU(t *testing.T) {
	dev := gputest.Device(t)
	in, err := dev.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !in.DMABuf {
		t.Skipf("GPU %d (%s) cannot export device memory as a DMA-BUF", in.Ordinal, in.Name)
	}
	runHWReorder(t, func(r *rig, n int) batchMem {
		size := (2*n + 65535) &^ 65535
		m, err := dev.AllocDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		// Poison: a slot the device did not write reads back as 0xee.
		if err := dev.Memset(m.Ptr(), 0xee, size); err != nil {
			t.Fatal(err)
		}
		fd, err := dev.ExportDMABuf(m.Ptr(), size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		im := gpudma.New()
		t.Cleanup(func() { im.Close() })
		b, err := im.Import(fd, 0, uint64(size))
		if err != nil {
			t.Fatal(err)
		}
		// The window sits above the rig's host memory in the device's DMA space, under
		// its own physical-address key.
		const win = 0x4_0000_0000
		if err := r.d.DMA().MapWindow(win, uint64(size), b.Window, model.DMARead|model.DMAWrite); err != nil {
			t.Fatal(err)
		}
		mb := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
		k := prm.MKC
		key := cmdIn(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), k.AccessMode10.At(mb), prm.MKeyAccessPA, k.Lr.At(mb), 1, k.Lw.At(mb), 1,
			k.PD.At(mb), r.pd, k.QPN.At(mb), 0xffffff, k.StartAddr.At(mb), uint64(win), k.Len.At(mb), uint64(size), k.MKey70.At(mb), 0x5b)
		lkey := uint32(prm.CreateMKeyOut.MKeyIndex.Get(r.cmd(key, 16)))<<8 | 0x5b
		return batchMem{addr: [2]uint64{win, win + uint64(n)}, lkey: lkey, read: func(a uint64, n int) []byte {
			p := make([]byte, n)
			if err := dev.CopyDtoH(p, m.Ptr()+cudart.DevicePtr(a-win)); err != nil {
				t.Fatalf("copy back from the GPU: %v", err)
			}
			return p
		}}
	})
}
