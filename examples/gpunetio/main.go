// Command gpunetio runs CUDA kernels that receive and send by themselves on mlx5 queues
// (package mlx5/gpunetio, DOCA GPUNetIO's model without DOCA): the CPU creates the queues
// once; the persistent receiver kernel polls the completion queue, copies each packet into a
// batch in GPU memory, re-posts the receive WQEs and hands full batches to the CPU through a
// semaphore ring; the transmitter kernel sends a GPU buffer as packets, building the WQEs
// and ringing the doorbell itself.
//
//	gpunetio --model [--packets N] [--size B]    the ConnectX device model: model:0's transmitter
//	                                             kernel → cable → model:1's receiver kernel
//	gpunetio --address mlx5_0 [--packets N]      a ConnectX over DevX: the receiver kernel takes
//	                                             N packets of whatever the port receives
//
// It needs an NVIDIA GPU either way. What ran in this project is the --model form only (no
// ConnectX was available); see the package documentation of mlx5/gpunetio for what real
// hardware needs besides (the UAR mapped into the GPU, GPUDirect RDMA for GPU rings).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/daqiri-go/daqiri/cudart"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/channel/devx"
	"github.com/daqiri-go/daqiri/mlx5/gpunetio"
	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

type options struct {
	model   bool
	address string
	packets int
	size    int
	timeout time.Duration
	memType string
	bufType string
}

// summary is what a run did.
type summary struct {
	Sent, Received, Batches int
	Bytes                   uint64
	InOrder                 bool
}

func main() {
	var o options
	flag.BoolVar(&o.model, "model", false, "use the ConnectX device model (model:0 → model:1) instead of a NIC")
	flag.StringVar(&o.address, "address", "", "RDMA device of a ConnectX (DevX), e.g. mlx5_0")
	flag.IntVar(&o.packets, "packets", 4096, "packets to send (model) or receive")
	flag.IntVar(&o.size, "size", 1024, "frame size in bytes (model)")
	flag.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	flag.StringVar(&o.memType, "mem-type", "CPU_GPU", "where the rings go: CPU_GPU or GPU (DOCA's doca_gpu_mem_type)")
	flag.StringVar(&o.bufType, "buf-mem-type", "GPU", "where the packet buffers go: GPU or CPU_GPU")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gpunetio:", err)
		os.Exit(1)
	}
}

const batchPkts, slotBytes, semEntries = 64, 2048 + gpunetio.SlotHeader, 8

func run(ctx context.Context, o options, out io.Writer) (sum summary, err error) {
	if o.model == (o.address != "") {
		return sum, errors.New("give --model or --address")
	}
	if o.packets <= 0 || o.packets%batchPkts != 0 {
		return sum, fmt.Errorf("--packets %d: a positive multiple of %d (the batch size)", o.packets, batchPkts)
	}
	if o.size < 60 || o.size > 2048 {
		return sum, fmt.Errorf("--size %d: 60 to 2048 bytes", o.size)
	}
	memType, err := gpunetio.ParseMemType(o.memType)
	if err != nil {
		return sum, fmt.Errorf("--mem-type: %w", err)
	}
	bufType, err := gpunetio.ParseMemType(o.bufType)
	if err != nil {
		return sum, fmt.Errorf("--buf-mem-type: %w", err)
	}
	drv, err := cudart.Open()
	if err != nil {
		return sum, fmt.Errorf("the kernels need an NVIDIA GPU: %w", err)
	}
	dev, err := drv.Device(0)
	if err != nil {
		return sum, err
	}
	defer dev.Close()
	k, err := gpunetio.LoadKernels(dev, nil)
	if err != nil {
		return sum, err
	}
	defer k.Close()
	alloc := gpunetio.CUDAAllocator{Dev: dev}

	var rxCh, txCh channel.Channel
	var devs []*model.Device
	if o.model {
		for n := 0; n < 2; n++ {
			d := model.New(model.Config{MAC: modelch.MAC(n)})
			c, err := modelch.Open(d, fmt.Sprintf("model:%d", n))
			if err != nil {
				return sum, err
			}
			defer c.Close()
			devs = append(devs, d)
			if n == 0 {
				txCh = c
			} else {
				rxCh = c
			}
		}
		devs[0].Cable(devs[1])
		runCtx, stop := context.WithCancel(context.Background())
		defer stop()
		for _, d := range devs {
			go d.Run(runCtx)
		}
	} else {
		c, err := devx.Open(o.address)
		if err != nil {
			return sum, err
		}
		defer c.Close()
		rxCh = c
	}

	rx, err := gpunetio.Open(rxCh, gpunetio.Config{MemType: memType, BufMemType: bufType, RxWQEs: 8, StrideSize: 2048, CQECompression: true}, alloc)
	if err != nil {
		return sum, err
	}
	defer rx.Close()
	sem, err := gpunetio.NewSemRing(alloc, memType, semEntries)
	if err != nil {
		return sum, err
	}
	defer sem.Close()
	batches, err := dev.AllocDevice(semEntries * batchPkts * slotBytes)
	if err != nil {
		return sum, err
	}
	defer batches.Close()
	rs, err := dev.NewStream(true)
	if err != nil {
		return sum, err
	}
	defer rs.Close()
	var tx *gpunetio.Queue
	var ts *cudart.Stream
	if o.model {
		n, size := o.packets, o.size
		if tx, err = gpunetio.Open(txCh, gpunetio.Config{MemType: memType, BufMemType: bufType, NoRx: true, TxBufSize: n * size}, alloc); err != nil {
			return sum, err
		}
		// Registered before the kernels' Stop below, so it runs after it (defers run last-in
		// first-out): freeing GPU memory waits for running kernels.
		defer tx.Close()
		// The GPU buffer to send: frames to model:1 with their sequence number at byte 14.
		img := make([]byte, n*size)
		for i := 0; i < n; i++ {
			f := img[i*size : (i+1)*size]
			copy(f, modelch.MAC(1))
			copy(f[6:], modelch.MAC(0))
			binary.BigEndian.PutUint16(f[12:], 0x88b5)
			binary.BigEndian.PutUint32(f[14:], uint32(i))
		}
		if err := writeMem(tx.TxBuf(), img); err != nil {
			return sum, err
		}
		if ts, err = dev.NewStream(true); err != nil {
			return sum, err
		}
		defer ts.Close()
	}
	if err := k.LaunchReceiver(rs, rx, sem, uint64(batches.Ptr()), batchPkts, slotBytes, 0); err != nil {
		return sum, err
	}
	// From here on kernels run: stop them before anything is freed.
	defer func() {
		if tx != nil {
			err = errors.Join(err, tx.Stop(10*time.Second), ts.Synchronize())
		}
		if e := rx.Stop(10 * time.Second); e != nil {
			err = errors.Join(err, e)
			return
		}
		err = errors.Join(err, rs.Synchronize())
	}()
	if tx != nil {
		if err := k.LaunchTransmitter(ts, tx, uint32(o.size), uint32(o.packets), 32, 1); err != nil {
			return sum, err
		}
		sum.Sent = o.packets
	}

	// The CPU's part: take batches, check them, hand the entries back; watch the kernel.
	w := rx.NewWatchdog(5 * time.Second)
	buf := make([]byte, batchPkts*slotBytes)
	sum.InOrder = true
	for sum.Received < o.packets {
		b, ok := sem.Poll()
		if !ok {
			if err := w.Check(); err != nil {
				return sum, err
			}
			if tx != nil {
				if err := tx.KernelErr(); err != nil {
					return sum, err
				}
			}
			select {
			case <-ctx.Done():
				return sum, fmt.Errorf("received %d of %d packets: %w", sum.Received, o.packets, ctx.Err())
			case <-time.After(100 * time.Microsecond):
			}
			continue
		}
		if err := dev.CopyDtoH(buf, batches.Ptr()+cudart.DevicePtr(b.Index*batchPkts*slotBytes)); err != nil {
			return sum, err
		}
		for i := 0; i < b.Count; i++ {
			s := buf[i*slotBytes:]
			l := binary.LittleEndian.Uint32(s[gpunetio.SlotLen:])
			if o.model && (l != uint32(o.size) || binary.BigEndian.Uint32(s[gpunetio.SlotHeader+14:]) != uint32(sum.Received)) {
				sum.InOrder = false
			}
			sum.Received++
		}
		sum.Bytes += b.Bytes
		sum.Batches++
		sem.Release()
	}
	if ts != nil {
		if err := ts.Synchronize(); err != nil {
			return sum, err
		}
		if err := tx.KernelErr(); err != nil {
			return sum, err
		}
	}
	fmt.Fprintf(out, "received %d packets (%d bytes) in %d batches of %d in GPU memory", sum.Received, sum.Bytes, sum.Batches, batchPkts)
	if o.model {
		fmt.Fprintf(out, "; sent %d by the transmitter kernel; in order and intact: %v", sum.Sent, sum.InOrder)
	}
	fmt.Fprintln(out)
	if tx != nil {
		fmt.Fprintln(out, "send doorbells:", tx.DoorbellPath())
	}
	return sum, nil
}

// writeMem fills queue memory from the CPU: a copy to device memory, or a plain copy.
func writeMem(m gpunetio.Mem, p []byte) error {
	if b := m.Bytes(); b != nil {
		copy(b, p)
		return nil
	}
	dm, ok := m.(gpunetio.DeviceMem)
	if !ok {
		return fmt.Errorf("%T: no way to write it", m)
	}
	return dm.WriteAt(p, 0)
}
