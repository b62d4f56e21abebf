package vfioch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Init segment registers the transport uses, as byte offsets of big-endian 32-bit words
// (device.h struct mlx5_init_seg; package prm checks the offsets against the header).
var (
	regCmdifRev     = prm.InitSeg.CmdifRevFWSub.ByteOff()
	regCmdqAddrH    = prm.InitSeg.CmdqAddrH.ByteOff()
	regCmdqAddrLSz  = prm.InitSeg.CmdqAddrLSz.ByteOff()
	regCmdDbell     = prm.InitSeg.CmdDbell.ByteOff()
	regInitializing = prm.InitSeg.Initializing.ByteOff()
	regHealthCount  = prm.InitSeg.HealthCounter.ByteOff()
	// The health buffer's fw_version word and the word holding rfr and synd (mlx5_ifc.h
	// health_buffer inside initial_seg).
	regHealthFWVer = prm.HealthBuffer.FWVersion.At(prm.InitialSeg.HealthBuffer.Off).ByteOff()
	regHealthRFR   = prm.HealthBuffer.Rfr.At(prm.InitialSeg.HealthBuffer.Off).ByteOff()
	regHealthSynd  = prm.HealthBuffer.Synd.At(prm.InitialSeg.HealthBuffer.Off).ByteOff() &^ 3
)

// NIC interface states in cmdq_addr_l_sz bits 10:8 (rdma-core mlx5_vfio.c
// MLX5_NIC_IFC_OFFSET, MLX5_NIC_IFC_DISABLED, MLX5_NIC_IFC_SW_RESET; the kernel's
// mlx5_get_nic_state reads the same three bits).
const (
	nicIfcShift    = 8
	nicIfcFull     = 0
	nicIfcDisabled = 1
	nicIfcSWReset  = 7
)

const (
	cmdEntrySize = 64
	inlineLen    = 16   // bytes of input and of output carried in the entry itself
	mailboxAlign = 1024 // next_pointer_31_10: mailbox blocks are 1 KiB aligned
	maxCmdSlots  = 32   // MLX5_MAX_COMMANDS (mlx5_vfio.h): the doorbell is a 32-bit mask
)

// rd reads a big-endian register of BAR0.
func (c *Channel) rd(off int) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], c.bar.Read32(off))
	return binary.BigEndian.Uint32(b[:])
}

// wr writes a big-endian register of BAR0.
func (c *Channel) wr(off int, v uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	c.bar.Write32(off, binary.NativeEndian.Uint32(b[:]))
}

func (c *Channel) wr64(off int, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	c.bar.Write64(off, binary.NativeEndian.Uint64(b[:]))
}

// cmdq is the command queue: entries in one DMA page, mailbox blocks from a pool, a free
// list of slots and, per slot, the signal the event loop sends when the command-completion
// event names it.
type cmdq struct {
	buf    *dmaBuf // the page is at offset 0
	nslots int
	stride int
	slots  chan int
	done   []chan struct{}
	boxes  *blockPool
	token  uint8 // guarded by the slot hand-off: see nextToken
	tokens chan uint8
}

func (q *cmdq) entry(slot int) []byte {
	o := slot * q.stride
	return q.buf.b[o : o+cmdEntrySize : o+cmdEntrySize]
}

// initCmdq checks the command interface revision and geometry, maps the queue page and the
// mailbox pool, writes the queue's address and turns on memory decoding and bus mastering
// (mlx5_vfio.c mlx5_vfio_init_cmd_interface, mlx5_vfio_enable_pci_cmd).
func (c *Channel) initCmdq() error {
	raw := c.bar.Read32(regCmdifRev)
	if raw == 0xffffffff {
		return fmt.Errorf("%w: the init segment reads all ones (cmdif_rev_fw_sub): the function is gone or not responding", ErrDeviceFailed)
	}
	if rev := c.rd(regCmdifRev) >> 16; rev != prm.CmdIfRev {
		return fmt.Errorf("%w: command interface revision %d, this driver speaks %d (is %s a ConnectX?)", ErrUnsupportedDevice, rev, prm.CmdIfRev, c.fn.Name())
	}
	lsz := c.rd(regCmdqAddrLSz) & 0xff
	logSize, logStride := int(lsz>>4&0xf), int(lsz&0xf)
	if 1<<logSize > maxCmdSlots || 1<<logStride < cmdEntrySize || (1<<logSize)*(1<<logStride) > 4096 {
		return fmt.Errorf("%w: command queue of 2^%d entries of 2^%d bytes (at most %d entries of at least %d bytes in one page)", ErrUnsupportedDevice, logSize, logStride, maxCmdSlots, cmdEntrySize)
	}
	buf, err := c.mem.alloc(chunkSize, "command queue and mailboxes")
	if err != nil {
		return err
	}
	n := min(1<<logSize, c.opts.CommandSlots)
	q := &cmdq{buf: buf, nslots: n, stride: 1 << logStride, slots: make(chan int, n), done: make([]chan struct{}, n), tokens: make(chan uint8, 1)}
	// The mailbox pool takes the rest of the chunk after the queue page and the EQ ring.
	q.boxes = newBlockPool(buf, ctlMailboxOff, mailboxAlign)
	for i := range n {
		q.slots <- i
		q.done[i] = make(chan struct{}, 1)
	}
	q.tokens <- 0
	c.q = q
	// Address bits 63:32, then 31:12 with the NIC interface state 0 (full) in bits 10:8.
	c.wr(regCmdqAddrH, uint32(buf.iova>>32))
	c.wr(regCmdqAddrLSz, uint32(buf.iova)&^0xfff)
	iomem.ToDevice() // the address before what follows (mlx5_vfio_init_cmd_interface: udma_to_device_barrier)
	return c.fn.EnableBusMaster()
}

// nextToken returns a command token: non-zero, different from the previous one, stamped in
// the entry and every mailbox block (cmd.c alloc_token).
func (q *cmdq) nextToken() uint8 {
	t := <-q.tokens
	t++
	if t == 0 {
		t = 1
	}
	q.tokens <- t
	return t
}

// chain writes data into the blocks as one mailbox chain (cmd_if_box: 512 data bytes, the
// next block's address, the block number from 0, the token) and returns the first block's
// IOVA.
func (c *Channel) chain(blocks []int, data []byte, token uint8) uint64 {
	b := prm.CmdIfBox
	for i, off := range blocks {
		box := c.q.boxes.bytes(off)
		clear(box)
		if len(data) > 0 {
			data = data[copy(box[:prm.CmdDataBlockSize], data):]
		}
		var next uint64
		if i+1 < len(blocks) {
			next = c.q.boxes.iova(blocks[i+1])
		}
		b.NextPointerHi.Set(box, next>>32)
		b.NextPointerLo.Set(box, next&0xffffffff>>10)
		b.BlockNumber.Set(box, uint64(i))
		b.Token.Set(box, uint64(token))
	}
	return c.q.boxes.iova(blocks[0])
}

func nblocks(n int) int {
	if n <= inlineLen {
		return 0
	}
	return (n - inlineLen + prm.CmdDataBlockSize - 1) / prm.CmdDataBlockSize
}

// run posts one command through the queue and waits for it.
func (c *Channel) run(in, out []byte) error {
	if len(in) < 8 || len(out) < 16 {
		return fmt.Errorf("%s: command of %d input and %d output bytes: at least 8 and 16 are needed", c.name, len(in), len(out))
	}
	op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	opMod := uint16(prm.CmdIn.OpMod.Get(in))
	if err := c.Health(); err != nil {
		return fmt.Errorf("%s: %v: %w", c.name, op, err)
	}
	q := c.q
	var slot int
	select {
	case slot = <-q.slots:
	case <-c.failed:
		return fmt.Errorf("%s: %v: %w", c.name, op, c.Health())
	case <-time.After(c.opts.CommandTimeout):
		return fmt.Errorf("%s: %v: %w: no command slot came free within %v", c.name, op, ErrCommandTimeout, c.opts.CommandTimeout)
	}
	nIn, nOut := nblocks(len(in)), nblocks(len(out))
	blocks := q.boxes.get(nIn + nOut)
	if blocks == nil && nIn+nOut > 0 {
		q.slots <- slot
		return fmt.Errorf("%s: %v of %d input and %d output bytes needs %d mailboxes, more than are free", c.name, op, len(in), len(out), nIn+nOut)
	}
	token := q.nextToken()
	e := prm.CmdQueueEntry
	ent := q.entry(slot)
	clear(ent)
	e.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
	e.InputLength.Set(ent, uint64(len(in)))
	e.OutputLength.Set(ent, uint64(len(out)))
	e.Token.Set(ent, uint64(token))
	copy(ent[e.CommandInputInlineData.ByteOff():][:inlineLen], in)
	if nIn > 0 {
		p := c.chain(blocks[:nIn], in[inlineLen:], token)
		e.InputMailboxPointerHi.Set(ent, p>>32)
		e.InputMailboxPointerLo.Set(ent, p&0xffffffff>>9)
	}
	if nOut > 0 {
		p := c.chain(blocks[nIn:], nil, token)
		e.OutputMailboxPointerHi.Set(ent, p>>32)
		e.OutputMailboxPointerLo.Set(ent, p&0xffffffff>>9)
	}
	select { // a stale completion signal of the slot's previous command
	case <-q.done[slot]:
	default:
	}
	// Ownership to hardware last, then the doorbell (mlx5_vfio.c mlx5_vfio_post_cmd:
	// udma_to_device_barrier between them).
	e.Ownership.Set(ent, prm.CmdOwnerHW)
	iomem.ToDevice()
	start := time.Now()
	c.hw.Lock()
	c.wr(regCmdDbell, 1<<slot)
	c.hw.Unlock()
	if err := c.waitSlot(slot, ent); err != nil {
		// The slot and its mailboxes stay with the device: it may still complete the
		// command and write them. They are freed with the channel.
		c.stats.add(func(s *Stats) { s.RetiredSlots++ })
		return fmt.Errorf("%s: %v (op_mod %#x) after %v: %w", c.name, op, opMod, time.Since(start).Round(time.Microsecond), err)
	}
	defer func() {
		q.boxes.put(blocks)
		q.slots <- slot
	}()
	if st := prm.DeliveryStatus(e.Status.Get(ent)); st != prm.DeliveryOK {
		return fmt.Errorf("%s: %v (op_mod %#x): %w: delivery status %#x (%s)", c.name, op, opMod, ErrDelivery, uint8(st), deliveryName(st))
	}
	clear(out)
	copy(out, ent[e.CommandOutputInlineData.ByteOff():][:inlineLen])
	rest := out[min(inlineLen, len(out)):]
	for _, off := range blocks[nIn:] {
		rest = rest[copy(rest, c.q.boxes.bytes(off)[:prm.CmdDataBlockSize]):]
	}
	c.stats.add(func(s *Stats) { s.Commands++ })
	if st := prm.Status(prm.CmdOut.Status.Get(out)); st != prm.StatusOK {
		return &channel.CommandError{Opcode: uint16(op), OpMod: opMod, Status: uint8(st), Syndrome: uint32(prm.CmdOut.Syndrome.Get(out)),
			Name: op.String(), Detail: fmt.Sprintf("%s: status %v", c.name, st)}
	}
	return nil
}

// waitSlot waits until the device hands the entry back. Before the async EQ exists it polls
// the ownership bit (mlx5_vfio.c mlx5_vfio_poll_timeout); after, it waits for the
// command-completion event and reads the bit then (mlx5_vfio_wait_event), falling back to
// the bit when no event came within the poll interval (an interrupt that never arrives).
func (c *Channel) waitSlot(slot int, ent []byte) error {
	err := c.waitOwner(slot, ent)
	// The status and output after the ownership bit that handed them back (mlx5_vfio_cmd_do:
	// udma_from_device_barrier after mlx5_vfio_poll_timeout).
	iomem.FromDevice()
	return err
}

// waitOwner is waitSlot without the barrier: it returns nil once ent's ownership bit says
// software.
func (c *Channel) waitOwner(slot int, ent []byte) error {
	e := prm.CmdQueueEntry
	deadline := time.Now().Add(c.opts.CommandTimeout)
	events := c.events.Load()
	for i := 0; ; i++ {
		if events {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("%w: no completion within %v", ErrCommandTimeout, c.opts.CommandTimeout)
			}
			t := time.NewTimer(min(left, c.opts.PollInterval))
			select {
			case <-c.q.done[slot]:
				t.Stop()
				if e.Ownership.Get(ent) == prm.CmdOwnerSW {
					c.missed.Store(0)
					c.stats.add(func(s *Stats) { s.ByEvent++ })
					return nil
				}
			case <-c.failed:
				t.Stop()
				return c.Health()
			case <-t.C:
				if e.Ownership.Get(ent) == prm.CmdOwnerSW {
					c.missedInterrupt()
					c.stats.add(func(s *Stats) { s.ByPolling++ })
					return nil
				}
			}
			continue
		}
		if e.Ownership.Get(ent) == prm.CmdOwnerSW {
			c.stats.add(func(s *Stats) { s.ByPolling++ })
			return nil
		}
		if err := c.Health(); err != nil {
			return err
		}
		if i%64 == 63 && c.bar.Read32(regHealthFWVer) == 0xffffffff {
			// A removed function reads all ones and will never complete the command.
			c.fail(fmt.Errorf("%w: BAR0 reads all ones (health buffer fw_version) while a command waits: the function was removed or stopped answering", ErrDeviceFailed))
			return c.Health()
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: ownership not returned within %v", ErrCommandTimeout, c.opts.CommandTimeout)
		}
		if i < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Duration(i-63)*10*time.Microsecond, time.Millisecond))
		}
	}
}

// deliveryName names a delivery status as cmd.c's deliv_status_to_str does.
func deliveryName(s prm.DeliveryStatus) string {
	switch s {
	case prm.DeliverySignatureErr:
		return "signature error"
	case prm.DeliveryTokenErr:
		return "token error"
	case prm.DeliveryBadBlockNumErr:
		return "bad mailbox block number"
	case prm.DeliveryOutPtrAlignErr:
		return "output mailbox pointer not aligned or unreadable"
	case prm.DeliveryInPtrAlignErr:
		return "input mailbox pointer not aligned or unreadable"
	case prm.DeliveryFWErr:
		return "firmware error"
	case prm.DeliveryInLengthErr:
		return "bad input length"
	case prm.DeliveryOutLengthErr:
		return "bad output length"
	case prm.DeliveryResFldNotClrErr:
		return "reserved fields not cleared"
	case prm.DeliveryCmdDescrErr:
		return "bad command descriptor type"
	}
	return "unknown"
}

// Errors of the transport besides *channel.CommandError.
var (
	// ErrCommandTimeout: the device did not hand a command back in time.
	ErrCommandTimeout = errors.New("mlx5 vfio: command timed out")
	// ErrDelivery: the device could not carry a command (bad mailbox chain, token, length).
	ErrDelivery = errors.New("mlx5 vfio: command not delivered")
	// ErrDeviceFailed: health monitoring found the device dead or gone; every later call
	// fails with it.
	ErrDeviceFailed = errors.New("mlx5 vfio: device failed")
	// ErrUnsupportedDevice: the function is not a ConnectX this transport can drive.
	ErrUnsupportedDevice = errors.New("mlx5 vfio: unsupported device")
)
