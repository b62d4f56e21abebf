package model

import (
	"encoding/binary"
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// BAR0 geometry. The init segment is at offset 0 and reaches past the first 4 KiB page (the
// internal timer, health counter and real-time clock are at 0x1000–0x1047; device.h struct
// mlx5_init_seg), so the model hands out UAR indices from 2: UAR n is the 4 KiB page at
// n<<12, as the kernel maps it (uar2pfn: BAR0 start + index pages). Inferred: a real BAR0 is
// larger (32 MiB on ConnectX-5) and firmware's first UAR index is not documented.
const (
	BAR0Size     = 1 << 20
	uarPageShift = 12
	firstUAR     = 2
	maxUAR       = BAR0Size>>uarPageShift - 1
	initSegSize  = 2 << uarPageShift
)

// Command queue geometry the init segment reports in cmdq_addr_l_sz (log_cmdq_size,
// log_cmdq_stride): 32 entries of 64 bytes, as ConnectX devices report and mlx5_core and
// mlx5_vfio.c accept (at most MLX5_MAX_COMMANDS entries, stride ≥ the 64-byte entry).
const (
	logCmdqSize   = 5
	logCmdqStride = 6
	cmdEntrySize  = 64
	mailboxSize   = 576  // cmd_if_box: 512 data bytes + 64 bytes of control
	mailboxAlign  = 1024 // next_pointer_31_10: blocks are 1 KiB aligned
)

// healthTick is how often the health counter advances. Inferred: the PRM says only that it
// increments while firmware is alive; mlx5_core polls it every 2 s and declares firmware dead
// after several polls without change, so any period well under 2 s behaves the same.
const healthTickNanos = 100e6

// initSeg is the writable part of the init segment.
type initSeg struct {
	cmdqH, cmdqL      uint32 // as the driver wrote them
	nicInterface      uint8
	initializingReads int
	healthSyndrome    uint8
	failed            bool
	frozenCounter     uint64 // the health counter when the device failed
	fastTeardown      bool   // TEARDOWN_HCA prepare-fast done, NIC interface not yet disabled
}

// nicIfcDisabled is the NIC interface state a driver writes to finish a fast teardown
// (kernel mlx5_core.h MLX5_NIC_IFC_DISABLED, mlx5_vfio.c the same value).
const nicIfcDisabled = 1

// BAR is the device's BAR0 as a VFIO region gives it: byte-addressed reads and writes at
// offsets (pread/pwrite on the region, or loads and stores on its mapping), registers
// big-endian as the device defines them.
type BAR struct{ d *Device }

// BAR0 returns the device's BAR0.
func (d *Device) BAR0() BAR { return BAR{d} }

// Size is the BAR's length in bytes.
func (BAR) Size() int64 { return BAR0Size }

// ReadAt reads len(p) bytes at off. Reads of the init segment see its registers; reads of
// UAR pages see zeros (their registers are write-only).
func (b BAR) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > BAR0Size || int64(len(p)) > BAR0Size-off {
		return 0, fmt.Errorf("mlx5 model: BAR0 read of %d bytes at %#x is outside the %#x-byte BAR", len(p), off, BAR0Size)
	}
	clear(p)
	if off < initSegSize {
		img := b.d.initSegImage(off, len(p))
		copy(p, img[off:])
	}
	return len(p), nil
}

// WriteAt writes p at off: the init segment's command queue address and command doorbell,
// or a UAR page's doorbells and BlueFlame buffers.
func (b BAR) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > BAR0Size || int64(len(p)) > BAR0Size-off {
		return 0, fmt.Errorf("mlx5 model: BAR0 write of %d bytes at %#x is outside the %#x-byte BAR", len(p), off, BAR0Size)
	}
	d := b.d
	if off < initSegSize {
		// Registers are 32-bit; a 64-bit store covers two.
		for i := 0; i+4 <= len(p); i += 4 {
			if (off+int64(i))%4 != 0 {
				continue
			}
			d.writeInitSeg(off+int64(i), binary.BigEndian.Uint32(p[i:]))
		}
		return len(p), nil
	}
	uar := uint32(off >> uarPageShift)
	in := uint32(off & (1<<uarPageShift - 1))
	if int(in)+len(p) > 1<<uarPageShift {
		return 0, fmt.Errorf("mlx5 model: BAR0 write of %d bytes at %#x crosses a UAR page", len(p), off)
	}
	if !d.uarAllocated(uar) {
		return len(p), nil // unallocated UAR pages ignore stores
	}
	d.dp().UARWrite(uar, in, p)
	return len(p), nil
}

// initSegImage renders the init segment's registers.
func (d *Device) initSegImage(off int64, n int) []byte {
	img := make([]byte, initSegSize)
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cfg
	set := func(f prm.Field, v uint64) { f.Set(img, v) }
	set(prm.InitialSeg.FWRevMajor, uint64(c.FWVersion[0]))
	set(prm.InitialSeg.FWRevMinor, uint64(c.FWVersion[1]))
	set(prm.InitialSeg.FWRevSubminor, uint64(c.FWVersion[2]))
	set(prm.InitialSeg.CmdInterfaceRev, prm.CmdIfRev)
	set(prm.InitSeg.CmdqAddrH, uint64(d.iseg.cmdqH))
	// cmdq_addr_l_sz: address bits 31:12, the NIC interface state in bits 10:8 (three bits
	// as the kernel's mlx5_get_nic_state and mlx5_vfio.c read them; mlx5_ifc.h names the
	// lower two nic_interface), and the queue geometry in the low byte.
	set(prm.InitSeg.CmdqAddrLSz, uint64(d.iseg.cmdqL&^0xfff)|uint64(d.iseg.nicInterface)<<8|logCmdqSize<<4|logCmdqStride)
	// The initializing bit stays set for the configured number of reads of its word.
	w := int64(prm.InitSeg.Initializing.ByteOff())
	if d.iseg.initializingReads > 0 {
		set(prm.InitialSeg.Initializing, 1)
		if off <= w && w < off+int64(n) {
			d.iseg.initializingReads--
		}
	}
	h := prm.InitialSeg.HealthBuffer.Off
	set(prm.HealthBuffer.FWVersion.At(h), uint64(c.FWVersion[0])<<24|uint64(c.FWVersion[1])<<16|uint64(c.FWVersion[2]))
	set(prm.HealthBuffer.Synd.At(h), uint64(d.iseg.healthSyndrome))
	now := d.clock.now()
	set(prm.InitialSeg.HealthSyndrome, uint64(d.iseg.healthSyndrome))
	counter := uint64(now) / healthTickNanos
	if d.iseg.failed {
		counter = d.iseg.frozenCounter
	}
	set(prm.InitialSeg.HealthCounter, counter)
	t := d.clock.FreeRunning()
	set(prm.InitSeg.InternalTimerH, t>>32)
	set(prm.InitSeg.InternalTimerL, t&0xffffffff)
	rt := d.clock.RealTime()
	set(prm.InitSeg.RealTimeH, rt>>32)
	set(prm.InitSeg.RealTimeL, rt&0xffffffff)
	return img
}

// Fail puts the device in a fatal error state as firmware reports one (mlx5_ifc.h
// initial_seg health_syndrome and the health buffer's synd, e.g.
// prm.InitialSegHealthFWInternalErr): the health counter stops, which is how mlx5_core's
// poll_health and mlx5_vfio.c notice a dead device, and every later command completes with
// INT_ERR (inferred: real firmware in this state may not complete commands at all; the
// model answers so that drivers under test do not have to wait for their timeouts).
func (d *Device) Fail(syndrome uint8) {
	now := d.clock.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.iseg.failed {
		d.iseg.frozenCounter = uint64(now) / healthTickNanos
	}
	d.iseg.failed = true
	d.iseg.healthSyndrome = syndrome
}

// writeInitSeg applies a 32-bit register store.
func (d *Device) writeInitSeg(off int64, v uint32) {
	switch off {
	case int64(prm.InitSeg.CmdqAddrH.ByteOff()):
		d.mu.Lock()
		d.iseg.cmdqH = v
		d.mu.Unlock()
	case int64(prm.InitSeg.CmdqAddrLSz.ByteOff()):
		// Address bits 31:12 and the NIC interface state (bits 10:8 from
		// MLX5_NIC_IFC_OFFSET; mlx5_vfio.c sets DISABLED (1) for a fast teardown and polls
		// for it); the size and stride nibbles are read-only.
		d.mu.Lock()
		d.iseg.cmdqL = v &^ 0xfff
		d.iseg.nicInterface = uint8(v>>8) & 7
		if d.iseg.nicInterface == nicIfcDisabled {
			d.nicDisabled()
		}
		d.mu.Unlock()
	case int64(prm.InitSeg.CmdDbell.ByteOff()):
		d.ringCmdDoorbell(v)
	}
}
