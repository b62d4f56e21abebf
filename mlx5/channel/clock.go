package channel

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// Clock is a channel that can say how the device's CQE timestamps convert to Unix time. The
// engine asks it once at open and again now and then (the conversion drifts and, for the
// free-running timer, its reference must stay within half the counter's wrap).
//
// DevX reads the clock information page the kernel maps for the context (rdma-core's
// mlx5dv_get_clock_info); VFIO and the model read the init segment's timers through BAR0,
// as a driver without a kernel does.
type Clock interface {
	Timebase() (Timebase, error)
}

// Timebase converts a device's CQE timestamps to Unix ns, in both PRM formats.
type Timebase struct {
	// RealTimeOffset is added to a real-time stamp (seconds<<32 | ns) read as ns. On DevX it
	// is 0: the kernel's mlx5_core keeps the device's real-time clock on the host's
	// CLOCK_REALTIME (it writes the MTUTC register from ktime_get_real when the device runs
	// in real-time mode, and PTP daemons steer it from there). Transports that read the
	// device's clock themselves measure it: host time minus device time.
	RealTimeOffset int64
	// Timer converts the free-running internal timer.
	Timer TimerScale
}

// TimerScale converts free-running timer ticks to Unix ns the way the kernel's clock
// information page does (struct mlx5_ib_clock_info; rdma-core mlx5dv_ts_to_ns): ns = Nsec
// + ((ticks - Cycles) & Mask) * Mult >> Shift, backwards for a tick before Cycles.
type TimerScale struct {
	Nsec, Cycles, Frac, Mask uint64
	Mult, Shift              uint32
}

// RealTime converts a stamp in the PRM's real-time format to Unix ns.
func (t *Timebase) RealTime(ts uint64) int64 {
	return int64(ts>>32)*1e9 + int64(ts&0xffffffff) + t.RealTimeOffset
}

// Nanos converts free-running ticks to Unix ns. The product is taken in 128 bits, so a
// reference read long ago loses no precision (the kernel's 64-bit product is what bounds its
// overflow_period; here only the counter's wrap, Mask/2 ticks, bounds it).
func (s *TimerScale) Nanos(ticks uint64) int64 {
	if s.Mult == 0 {
		return 0
	}
	delta := (ticks - s.Cycles) & s.Mask
	if delta > s.Mask/2 {
		// A stamp from before the reference (mlx5dv_ts_to_ns guards the same wrap).
		delta = (s.Cycles - ticks) & s.Mask
		return int64(s.Nsec) - int64(scale(delta, s.Mult, s.Shift, 0))
	}
	return int64(s.Nsec) + int64(scale(delta, s.Mult, s.Shift, s.Frac))
}

// Ticks is Nanos backwards: the timer's count at Unix time unixNs (a WAIT-on-time WQE on a
// queue that counts in timer ticks).
func (s *TimerScale) Ticks(unixNs int64) uint64 {
	if s.Mult == 0 {
		return 0
	}
	d, back := uint64(unixNs)-s.Nsec, unixNs < int64(s.Nsec)
	if back {
		d = s.Nsec - uint64(unixNs)
	}
	// d << shift / mult, in 128 bits.
	hi, lo := d>>(64-s.Shift), d<<s.Shift
	if s.Shift == 0 {
		hi = 0
	}
	var t uint64
	if hi < uint64(s.Mult) {
		t, _ = bits.Div64(hi, lo, uint64(s.Mult))
	} else {
		t = s.Mask
	}
	if back {
		return (s.Cycles - t) & s.Mask
	}
	return (s.Cycles + t) & s.Mask
}

// DeviceTime is RealTime backwards: Unix ns as a real-time format value (seconds<<32 | ns),
// 0 for a time before the device's epoch.
func (t *Timebase) DeviceTime(unixNs int64) uint64 {
	d := max(unixNs-t.RealTimeOffset, 0)
	return uint64(d/1e9)<<32 | uint64(d%1e9)
}

// scale is (d*mult + frac) >> shift without overflow.
func scale(d uint64, mult, shift uint32, frac uint64) uint64 {
	hi, lo := bits.Mul64(d, uint64(mult))
	lo, c := bits.Add64(lo, frac, 0)
	hi += c
	if shift == 0 {
		return lo
	}
	return hi<<(64-shift) | lo>>shift
}

// ScaleFor builds the TimerScale of a timer running at freqKHz whose count was ticks at Unix
// time unixNs: the largest shift (at most 32) whose multiplier fits 32 bits, as the kernel's
// clocks_calc_mult_shift picks one.
func ScaleFor(freqKHz, ticks uint64, unixNs int64) (TimerScale, error) {
	if freqKHz == 0 {
		return TimerScale{}, fmt.Errorf("the device reports a timer frequency of 0 kHz")
	}
	var mult uint64
	shift := uint32(32)
	for ; shift > 0; shift-- {
		if mult = (uint64(1e6) << shift) / freqKHz; mult <= 0xffffffff {
			break
		}
	}
	if mult == 0 || mult > 0xffffffff {
		return TimerScale{}, fmt.Errorf("a timer of %d kHz cannot be scaled to ns", freqKHz)
	}
	return TimerScale{Nsec: uint64(unixNs), Cycles: ticks, Mask: ^uint64(0), Mult: uint32(mult), Shift: shift}, nil
}

// InitSegTimebase reads a device's timers from its init segment, the way a driver that owns
// the BAR does: read32 loads a 32-bit big-endian register at a BAR0 offset (already in host
// order), ch answers QUERY_HCA_CAP for the timer's frequency. Each 64-bit timer is read high,
// low, high again, and reread when the high half moved (mlx5_core's mlx5_read_time), with
// the host's clock read around it; the sample with the narrowest host window of a few is
// kept.
func InitSegTimebase(ch Channel, read32 func(off int) uint32) (Timebase, error) {
	out := make([]byte, prm.QueryHCACapOut.Capability.End()/8)
	in := prm.NewCmdIn(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16)
	if err := ch.Exec(in, out); err != nil {
		return Timebase{}, fmt.Errorf("QUERY_HCA_CAP for the timer frequency: %w", err)
	}
	freq := prm.CmdHCACap.DeviceFrequencyKhz.At(prm.QueryHCACapOut.Capability.Off).Get(out)
	read64 := func(h, l prm.Field) uint64 {
		for range 4 {
			hi := read32(int(h.ByteOff()))
			lo := read32(int(l.ByteOff()))
			if read32(int(h.ByteOff())) == hi {
				return uint64(hi)<<32 | uint64(lo)
			}
		}
		return uint64(read32(int(h.ByteOff())))<<32 | uint64(read32(int(l.ByteOff())))
	}
	var best struct {
		window, mid int64
		rt, timer   uint64
	}
	best.window = -1
	for range 5 {
		t0 := time.Now().UnixNano()
		rt := read64(prm.InitSeg.RealTimeH, prm.InitSeg.RealTimeL)
		timer := read64(prm.InitSeg.InternalTimerH, prm.InitSeg.InternalTimerL)
		t1 := time.Now().UnixNano()
		if w := t1 - t0; best.window < 0 || w < best.window {
			best.window, best.mid, best.rt, best.timer = w, t0+w/2, rt, timer
		}
	}
	tb := Timebase{RealTimeOffset: best.mid - (int64(best.rt>>32)*1e9 + int64(best.rt&0xffffffff))}
	if freq != 0 {
		s, err := ScaleFor(freq, best.timer, best.mid)
		if err != nil {
			return Timebase{}, err
		}
		tb.Timer = s
	}
	return tb, nil
}
