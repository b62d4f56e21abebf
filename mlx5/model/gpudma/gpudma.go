// Package gpudma gives the ConnectX device model its DMA into GPU memory: it resolves a
// DMA-BUF fd, as a NIC's driver receives one from ibv_reg_dmabuf_mr or DEVX_UMEM_REG, to the
// CUDA allocation it exports, and hands the model a window onto those bytes.
//
// # How the model reaches device memory
//
// A ConnectX writes GPU memory over PCIe peer to peer (GPUDirect RDMA): the kernel's importer
// attaches to the exporter's DMA-BUF and gets bus addresses of the GPU's BAR. The model is
// code in the host process and has no bus: it must go through the CPU, and device memory
// (cuMemAlloc) has no CPU mapping that the driver offers on an x86 host with a discrete GPU
// (the BAR1 mapping GDRCopy makes needs its own kernel module; the NVIDIA driver refuses to
// mmap a DMA-BUF of a GPU with its own framebuffer, open-gpu-kernel-modules nv-dmabuf.c
// nv_dma_buf_mmap; only coherent platforms such as Grace Hopper give device memory CPU
// addresses). So every write the model makes into device memory is a copy by the GPU's
// copy engine (cuMemcpyHtoDAsync) on a stream the window owns, and the write returns after
// the stream synchronises: when the model queues the packet's CQE the bytes are in GPU memory,
// the ordering a NIC's PCIe writes ahead of its CQE give. Reads (a TX gather from device
// memory) are copies back the same way. host_pinned memory needs none of this: it is host
// memory, which the model writes with the CPU like any registered host memory.
//
// # Resolving a DMA-BUF
//
// The kernel resolves an fd through its file to the exporter's buffer; the model has only
// the fd. It checks what the kernel shows of it: the fd's link must be a DMA-BUF
// (/dmabuf:NAME), its size is the file's size, and NAME is what cudart.ExportDMABuf named it
// (cudart.DMABufName: the GPU ordinal and the address of the exported range). The driver then
// confirms that the address is device memory on that GPU (cuPointerGetAttribute) and that the
// buffer lies inside one allocation (cuMemGetAddressRange). An fd that is not a DMA-BUF, one
// no CUDA export named, an allocation freed since, or a range outside the buffer is refused;
// the model's channel reports it as CREATE_UMEM's BAD_PARAM, what a device gives for memory
// it cannot reach.
//
// The model stands in for the ConnectX here: no NIC wrote GPU memory in any of this
// project's runs.
package gpudma

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/mlx5/model"
)

// Buffer is a resolved DMA-BUF range: where the model maps it and how it reaches it.
type Buffer struct {
	// IOVA is the address the model maps the window at: the device address of the range,
	// which unified addressing keeps apart from every host address.
	IOVA   uint64
	Size   uint64
	Window model.DMAWindow
	// What names the allocation for messages ("GPU 0 allocation 0x7f...+2097152").
	What string
}

// Importer resolves DMA-BUF fds for one model channel. It opens the CUDA driver at the first
// Import and keeps one stream per GPU for the windows' copies; Close releases them.
type Importer struct {
	mu      sync.Mutex
	drv     *cudart.Driver
	devs    map[int]*cudart.Device
	streams map[int]*cudart.Stream
	closed  bool
}

// New returns an Importer; it touches the driver only at the first Import.
func New() *Importer { return &Importer{} }

// Describe reports what fd is as the kernel shows it: whether it is a DMA-BUF, its name and
// size. It needs no GPU.
func Describe(fd int) (isDMABuf bool, name string, size int64, err error) {
	if fd < 0 {
		return false, "", 0, fmt.Errorf("fd %d is not a file descriptor", fd)
	}
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return false, "", 0, fmt.Errorf("fd %d: %v", fd, err)
	}
	// The kernel names a DMA-BUF's file "/dmabuf:" and the buffer's name (dma-buf.c
	// dmabuffs_dname), and sets its inode's size to the buffer's (dma_buf_getfile).
	name, ok := strings.CutPrefix(link, "/dmabuf:")
	if !ok {
		return false, link, 0, nil
	}
	var st fstat
	if err := st.of(fd); err != nil {
		return true, name, 0, fmt.Errorf("fd %d: %v", fd, err)
	}
	return true, name, st.size, nil
}

// Import resolves length bytes at offset of DMA-BUF fd to the CUDA allocation it exports.
func (im *Importer) Import(fd int, offset, length uint64) (Buffer, error) {
	isBuf, name, size, err := Describe(fd)
	if err != nil {
		return Buffer{}, err
	}
	if !isBuf {
		return Buffer{}, fmt.Errorf("fd %d is not a DMA-BUF (it is %s)", fd, name)
	}
	ord, ptr, ok := cudart.ParseDMABufName(name)
	if !ok {
		return Buffer{}, fmt.Errorf("DMA-BUF fd %d (%d bytes, name %q) was not exported by cudart.ExportDMABuf: the model cannot tell which memory it holds", fd, size, name)
	}
	if length == 0 || offset > uint64(size) || length > uint64(size)-offset {
		return Buffer{}, fmt.Errorf("%d bytes at offset %#x lie outside DMA-BUF fd %d (%d bytes of GPU %d at %v)", length, offset, fd, size, ord, ptr)
	}
	dev, s, err := im.device(ord)
	if err != nil {
		return Buffer{}, err
	}
	info, err := im.drv.PointerInfo(uintptr(ptr))
	if err != nil {
		return Buffer{}, fmt.Errorf("DMA-BUF fd %d: %v", fd, err)
	}
	if info.Type != cudart.MemoryDevice || info.Ordinal != ord {
		return Buffer{}, fmt.Errorf("DMA-BUF fd %d exported %v on GPU %d, which is no longer device memory (%v): the allocation was freed before the registration", fd, ptr, ord, info.Type)
	}
	base, asize, err := dev.AddressRange(ptr)
	if err != nil {
		return Buffer{}, fmt.Errorf("DMA-BUF fd %d: %v", fd, err)
	}
	if uint64(ptr)+uint64(size) > uint64(base)+uint64(asize) {
		return Buffer{}, fmt.Errorf("DMA-BUF fd %d (%d bytes at %v) runs past its allocation (%d bytes at %v)", fd, size, ptr, asize, base)
	}
	at := ptr + cudart.DevicePtr(offset)
	return Buffer{
		IOVA: uint64(at), Size: length,
		Window: &window{dev: dev, s: s, ptr: at, size: length},
		What:   fmt.Sprintf("GPU %d allocation %v+%d", ord, base, asize),
	}, nil
}

// device is GPU ord and its copy stream, opened at first use.
func (im *Importer) device(ord int) (*cudart.Device, *cudart.Stream, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed {
		return nil, nil, errors.New("gpudma: importer closed")
	}
	if im.drv == nil {
		d, err := cudart.Open()
		if err != nil {
			return nil, nil, fmt.Errorf("a DMA-BUF of GPU %d needs the CUDA driver: %w", ord, err)
		}
		im.drv, im.devs, im.streams = d, map[int]*cudart.Device{}, map[int]*cudart.Stream{}
	}
	if dev := im.devs[ord]; dev != nil {
		return dev, im.streams[ord], nil
	}
	dev, err := im.drv.Device(ord)
	if err != nil {
		return nil, nil, err
	}
	// Non-blocking: the model's copies wait for no other stream's work (the application's
	// kernels), as a NIC's writes do not.
	s, err := dev.NewStream(true)
	if err != nil {
		dev.Close()
		return nil, nil, err
	}
	im.devs[ord], im.streams[ord] = dev, s
	return dev, s, nil
}

// Close destroys the streams and releases the GPUs' contexts. Windows must be unmapped
// first.
func (im *Importer) Close() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.closed {
		return nil
	}
	im.closed = true
	var errs []error
	for ord, s := range im.streams {
		errs = append(errs, s.Close(), im.devs[ord].Close())
	}
	im.devs, im.streams = nil, nil
	return errors.Join(errs...)
}

// window is device memory reached through the copy engine.
type window struct {
	dev  *cudart.Device
	s    *cudart.Stream
	ptr  cudart.DevicePtr
	size uint64
}

func (w *window) check(n int, off uint64) error {
	if off > w.size || uint64(n) > w.size-off {
		return fmt.Errorf("%d bytes at offset %#x outside the %d-byte window at %v", n, off, w.size, w.ptr)
	}
	return nil
}

// WriteAt implements model.DMAWindow: a host-to-device copy, complete on return.
func (w *window) WriteAt(p []byte, off uint64) error {
	if err := w.check(len(p), off); err != nil {
		return err
	}
	if err := w.dev.CopyHtoDAsync(w.ptr+cudart.DevicePtr(off), p, w.s); err != nil {
		return err
	}
	return w.s.Synchronize()
}

// ReadAt implements model.DMAWindow: a device-to-host copy, complete on return.
func (w *window) ReadAt(p []byte, off uint64) error {
	if err := w.check(len(p), off); err != nil {
		return err
	}
	if err := w.dev.CopyDtoHAsync(p, w.ptr+cudart.DevicePtr(off), w.s); err != nil {
		return err
	}
	return w.s.Synchronize()
}
