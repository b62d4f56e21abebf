package vfiouser

import (
	"encoding/binary"
	"slices"
	"testing"
)

// memDev is a minimal in-package device for the fuzz target: a 4 KiB BAR0, a 256-byte
// config space and 8 MSI-X vectors.
type memDev struct {
	bar [4096]byte
	cfg [256]byte
}

func (d *memDev) RegionInfo(i uint32) RegionInfo {
	switch i {
	case RegionBAR0:
		return RegionInfo{Size: 4096, Read: true, Write: true}
	case RegionConfig:
		return RegionInfo{Size: 256, Read: true, Write: true}
	}
	return RegionInfo{}
}
func (d *memDev) region(i uint32) []byte {
	if i == RegionBAR0 {
		return d.bar[:]
	}
	return d.cfg[:]
}
func (d *memDev) ReadRegion(i uint32, off uint64, p []byte) error {
	copy(p, d.region(i)[off:])
	return nil
}
func (d *memDev) WriteRegion(i uint32, off uint64, p []byte) error {
	copy(d.region(i)[off:], p)
	return nil
}
func (d *memDev) IRQInfo(i uint32) IRQInfo {
	if i == IRQMSIX {
		return IRQInfo{Count: 8}
	}
	return IRQInfo{}
}
func (d *memDev) MapDMA(uint64, []byte, Perm) error { return nil }
func (d *memDev) UnmapDMA(uint64, uint64) error     { return nil }
func (d *memDev) Reset() error                      { return nil }
func (d *memDev) Attach(*IRQs)                      {}
func (d *memDev) Detach()                           {}

func msg(cmd Command, flags uint32, p []byte) []byte {
	h := Header{ID: 7, Command: cmd, Size: uint32(HeaderSize + len(p)), Flags: flags}
	return append(h.Append(nil), p...)
}

// FuzzParse feeds arbitrary bytes to the header parser, the VERSION parser and the command
// handlers (a sequence of messages on one session, descriptors aside): nothing may panic,
// and every accepted region access must stay inside its region.
func FuzzParse(f *testing.F) {
	u32 := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.NativeEndian.AppendUint32(b, x)
		}
		return b
	}
	u64 := func(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
	ver := msg(CmdVersion, 0, append([]byte{0, 0, 0, 0}, `{"capabilities":{"max_msg_fds":8}}`+"\x00"...))
	f.Add(ver)
	f.Add(slices.Concat(ver, msg(CmdDeviceGetInfo, 0, u32(16, 0, 0, 0))))
	f.Add(slices.Concat(ver, msg(CmdDeviceGetRegionInfo, 0, append(u32(32, 0, 0, 0), make([]byte, 16)...))))
	f.Add(slices.Concat(ver, msg(CmdRegionRead, 0, append(u64(0xffc), u32(0, 4)...))))
	f.Add(slices.Concat(ver, msg(CmdRegionWrite, FlagNoReply, append(append(u64(8), u32(7, 2)...), 1, 2))))
	f.Add(slices.Concat(ver, msg(CmdDeviceSetIRQs, 0, u32(21, 0x22, 2, 0, 1, 1))))
	f.Add(slices.Concat(ver, msg(CmdDMAUnmap, 0, append(u32(24, 2), make([]byte, 16)...))))
	one := append(append(u64(0), u32(0, 8)...), u64(1)...)
	f.Add(slices.Concat(ver, msg(CmdRegionWriteMulti, 0, append(u64(1), one...))))
	f.Add([]byte{1, 0, 1, 0, 8, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseVersion(b)
		d := &memDev{}
		ss := &session{s: NewServer(d, Options{}), irqs: newIRQs(d)}
		for range 64 {
			h, err := ParseHeader(b)
			if err != nil || h.Size > uint32(len(b)) {
				return
			}
			reply, err := ss.dispatch(Request{Header: h, Payload: b[HeaderSize:h.Size]})
			if err == nil && h.Command == CmdRegionRead && len(reply) < regionRWSize {
				t.Fatalf("REGION_READ reply of %d bytes", len(reply))
			}
			b = b[h.Size:]
		}
	})
}
