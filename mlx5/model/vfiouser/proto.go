package vfiouser

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
)

// Command is a vfio-user message command (QEMU docs/interop/vfio-user.rst, "Commands").
type Command uint16

// Commands. The server handles those a client sends; DMA_READ/DMA_WRITE go the other way
// and are never sent by this server (see the package documentation).
const (
	CmdVersion              Command = 1
	CmdDMAMap               Command = 2
	CmdDMAUnmap             Command = 3
	CmdDeviceGetInfo        Command = 4
	CmdDeviceGetRegionInfo  Command = 5
	CmdDeviceGetRegionIOFDs Command = 6
	CmdDeviceGetIRQInfo     Command = 7
	CmdDeviceSetIRQs        Command = 8
	CmdRegionRead           Command = 9
	CmdRegionWrite          Command = 10
	CmdDMARead              Command = 11
	CmdDMAWrite             Command = 12
	CmdDeviceReset          Command = 13
	CmdDirtyPages           Command = 14 // QEMU's hw/vfio-user/protocol.h; not in the spec's table any more
	CmdRegionWriteMulti     Command = 15
	CmdDeviceFeature        Command = 16
	CmdMigDataRead          Command = 17
	CmdMigDataWrite         Command = 18
)

var cmdNames = map[Command]string{
	CmdVersion: "VERSION", CmdDMAMap: "DMA_MAP", CmdDMAUnmap: "DMA_UNMAP",
	CmdDeviceGetInfo: "DEVICE_GET_INFO", CmdDeviceGetRegionInfo: "DEVICE_GET_REGION_INFO",
	CmdDeviceGetRegionIOFDs: "DEVICE_GET_REGION_IO_FDS", CmdDeviceGetIRQInfo: "DEVICE_GET_IRQ_INFO",
	CmdDeviceSetIRQs: "DEVICE_SET_IRQS", CmdRegionRead: "REGION_READ", CmdRegionWrite: "REGION_WRITE",
	CmdDMARead: "DMA_READ", CmdDMAWrite: "DMA_WRITE", CmdDeviceReset: "DEVICE_RESET",
	CmdDirtyPages: "DIRTY_PAGES", CmdRegionWriteMulti: "REGION_WRITE_MULTI",
	CmdDeviceFeature: "DEVICE_FEATURE", CmdMigDataRead: "MIG_DATA_READ", CmdMigDataWrite: "MIG_DATA_WRITE",
}

// String is the command's name without the VFIO_USER_ prefix.
func (c Command) String() string {
	if n, ok := cmdNames[c]; ok {
		return n
	}
	return fmt.Sprintf("command(%d)", uint16(c))
}

// Header geometry and flags (vfio-user.rst "Header": 16 bytes; flags bits 0-3 the type,
// bit 4 No_reply, bit 5 Error).
const (
	HeaderSize   = 16
	FlagTypeMask = 0xf
	TypeCommand  = 0x0
	TypeReply    = 0x1
	FlagNoReply  = 0x10
	FlagError    = 0x20
)

// Header is the 16-byte header of every message, in host byte order (the spec: "all data
// is in the endianness of the host system").
type Header struct {
	ID      uint16
	Command Command
	Size    uint32 // the whole message, header included
	Flags   uint32
	Error   uint32 // errno of an error reply
}

// ParseHeader decodes a header from the first HeaderSize bytes of b and checks what can be
// checked without the payload: the size covers the header, the type is command or reply,
// no unknown flag bit is set.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, errf(syscall.EINVAL, "truncated header: %d of %d bytes", len(b), HeaderSize)
	}
	h := Header{
		ID:      binary.NativeEndian.Uint16(b[0:]),
		Command: Command(binary.NativeEndian.Uint16(b[2:])),
		Size:    binary.NativeEndian.Uint32(b[4:]),
		Flags:   binary.NativeEndian.Uint32(b[8:]),
		Error:   binary.NativeEndian.Uint32(b[12:]),
	}
	if h.Size < HeaderSize {
		return h, errf(syscall.EINVAL, "message %d (%v): size %d is smaller than the %d-byte header", h.ID, h.Command, h.Size, HeaderSize)
	}
	if t := h.Flags & FlagTypeMask; t != TypeCommand && t != TypeReply {
		return h, errf(syscall.EINVAL, "message %d (%v): unknown message type %d in flags %#x", h.ID, h.Command, t, h.Flags)
	}
	if h.Flags&^(FlagTypeMask|FlagNoReply|FlagError) != 0 {
		return h, errf(syscall.EINVAL, "message %d (%v): unknown flag bits %#x", h.ID, h.Command, h.Flags&^(FlagTypeMask|FlagNoReply|FlagError))
	}
	return h, nil
}

// Append encodes h at the end of b.
func (h Header) Append(b []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, h.ID)
	b = binary.NativeEndian.AppendUint16(b, uint16(h.Command))
	b = binary.NativeEndian.AppendUint32(b, h.Size)
	b = binary.NativeEndian.AppendUint32(b, h.Flags)
	return binary.NativeEndian.AppendUint32(b, h.Error)
}

// Error is a request the server refused: the errno the reply carries and what was wrong.
type Error struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string { return e.Msg + ": " + e.Errno.Error() }

// Unwrap makes errors.Is(err, syscall.EINVAL) work.
func (e *Error) Unwrap() error { return e.Errno }

func errf(no syscall.Errno, format string, args ...any) error {
	return &Error{Errno: no, Msg: fmt.Sprintf(format, args...)}
}

// errnoOf is the errno an error reply carries: the one err wraps, EINVAL otherwise.
func errnoOf(err error) syscall.Errno {
	var no syscall.Errno
	if errors.As(err, &no) && no != 0 {
		return no
	}
	return syscall.EINVAL
}

// Structures carried in payloads, with the sizes vfio-user.rst gives (and linux/vfio.h for
// those it imports: vfio_device_info, vfio_region_info, vfio_irq_info, vfio_irq_set).
const (
	versionFixedSize  = 4  // major, minor
	dmaMapSize        = 32 // argsz, flags, offset, address, size
	dmaUnmapSize      = 24 // argsz, flags, address, size
	deviceInfoSize    = 16 // argsz, flags, num_regions, num_irqs
	regionInfoSize    = 32 // argsz, flags, index, cap_offset, size, offset
	irqInfoSize       = 16 // argsz, flags, index, count
	irqSetSize        = 20 // argsz, flags, index, start, count
	regionRWSize      = 16 // offset, region, count
	writeMultiFixed   = 8  // wr_cnt
	writeOneSize      = 24 // offset, region, count, 8 data bytes
	writeMultiMax     = 200
	writeOneMaxData   = 8
	maxMsgFDs         = 16 // QEMU's VFIO_USER_MAX_MAX_FDS: it rejects a larger max_msg_fds
	defaultMaxDataXfr = 1 << 20
	dmaPageSize       = 4096
	maxDMAMaps        = 65535 // QEMU's VFIO_USER_DEF_MAP_MAX: it rejects a larger max_dma_maps
)

// linux/vfio.h flag values that vfio-user reuses.
const (
	deviceFlagsReset = 1 << 0 // VFIO_DEVICE_FLAGS_RESET
	deviceFlagsPCI   = 1 << 1 // VFIO_DEVICE_FLAGS_PCI

	regionFlagRead  = 1 << 0 // VFIO_REGION_INFO_FLAG_READ
	regionFlagWrite = 1 << 1 // VFIO_REGION_INFO_FLAG_WRITE

	irqInfoEventfd    = 1 << 0 // VFIO_IRQ_INFO_EVENTFD
	irqInfoMaskable   = 1 << 1 // VFIO_IRQ_INFO_MASKABLE
	irqInfoAutomasked = 1 << 2 // VFIO_IRQ_INFO_AUTOMASKED
	irqInfoNoResize   = 1 << 3 // VFIO_IRQ_INFO_NORESIZE

	irqSetDataNone      = 1 << 0 // VFIO_IRQ_SET_DATA_NONE
	irqSetDataBool      = 1 << 1 // VFIO_IRQ_SET_DATA_BOOL
	irqSetDataEventfd   = 1 << 2 // VFIO_IRQ_SET_DATA_EVENTFD
	irqSetActionMask    = 1 << 3 // VFIO_IRQ_SET_ACTION_MASK
	irqSetActionUnmask  = 1 << 4 // VFIO_IRQ_SET_ACTION_UNMASK
	irqSetActionTrigger = 1 << 5 // VFIO_IRQ_SET_ACTION_TRIGGER
	irqSetDataMask      = irqSetDataNone | irqSetDataBool | irqSetDataEventfd
	irqSetActionMaskAll = irqSetActionMask | irqSetActionUnmask | irqSetActionTrigger

	dmaFlagRead   = 1 << 0 // VFIO_DMA_MAP_FLAG_READ
	dmaFlagWrite  = 1 << 1 // VFIO_DMA_MAP_FLAG_WRITE
	dmaUnmapDirty = 1 << 0 // VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP
	dmaUnmapAll   = 1 << 1 // VFIO_DMA_UNMAP_FLAG_ALL
)

// PCI region and interrupt indexes (linux/vfio.h VFIO_PCI_*_REGION_INDEX, *_IRQ_INDEX).
// vfio-user serves PCI devices only, so every device has these.
const (
	RegionBAR0   = 0
	RegionROM    = 6
	RegionConfig = 7
	RegionVGA    = 8
	NumRegions   = 9 // VFIO_PCI_NUM_REGIONS

	IRQINTx = 0
	IRQMSI  = 1
	IRQMSIX = 2
	IRQErr  = 3
	IRQReq  = 4
	NumIRQs = 5 // VFIO_PCI_NUM_IRQS
)

// le is shorthand for the payload's byte order.
var le = binary.NativeEndian

// Request is one parsed client message: header, payload and the file descriptors that came
// with it (owned by whoever holds the Request: closed by the server after handling).
type Request struct {
	Header
	Payload []byte
	FDs     []int
}

// capabilities is the JSON object of VFIO_USER_VERSION (vfio-user.rst "Version": the
// "capabilities" member and its names).
type capabilities struct {
	MaxMsgFDs       *uint64          `json:"max_msg_fds,omitempty"`
	MaxDataXferSize *uint64          `json:"max_data_xfer_size,omitempty"`
	PgSizes         *uint64          `json:"pgsizes,omitempty"`
	MaxDMAMaps      *uint64          `json:"max_dma_maps,omitempty"`
	Migration       *json.RawMessage `json:"migration,omitempty"`
	TwinSocket      *json.RawMessage `json:"twin_socket,omitempty"`
	WriteMultiple   *bool            `json:"write_multiple,omitempty"`
}

// Version is a parsed VFIO_USER_VERSION payload.
type Version struct {
	Major, Minor uint16
	// MaxMsgFDs and MaxDataXfer are the client's limits (defaults 1 and 1 MiB when absent,
	// as the spec says); WriteMultiple says it may send REGION_WRITE_MULTI.
	MaxMsgFDs     uint64
	MaxDataXfer   uint64
	WriteMultiple bool
	// Unknown lists capability names the server does not know (ignored, logged).
	Unknown []string
}

// ParseVersion decodes a VFIO_USER_VERSION payload: major, minor and the optional
// NUL-terminated JSON with a "capabilities" object whose known members must have the types
// the spec gives.
func ParseVersion(p []byte) (Version, error) {
	v := Version{MaxMsgFDs: 1, MaxDataXfer: defaultMaxDataXfr}
	if len(p) < versionFixedSize {
		return v, errf(syscall.EINVAL, "VERSION: payload of %d bytes, want at least %d", len(p), versionFixedSize)
	}
	v.Major, v.Minor = le.Uint16(p[0:]), le.Uint16(p[2:])
	js := p[versionFixedSize:]
	if len(js) == 0 {
		return v, nil
	}
	if js[len(js)-1] != 0 {
		return v, errf(syscall.EINVAL, "VERSION: version data of %d bytes is not NUL-terminated", len(js))
	}
	js = js[:len(js)-1]
	for i, c := range js {
		if c == 0 {
			return v, errf(syscall.EINVAL, "VERSION: NUL inside the version data at byte %d", i)
		}
	}
	if len(js) == 0 {
		return v, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return v, errf(syscall.EINVAL, "VERSION: version data is not a JSON object: %v", err)
	}
	for k := range top {
		if k != "capabilities" {
			v.Unknown = append(v.Unknown, k)
		}
	}
	raw, ok := top["capabilities"]
	if !ok {
		return v, nil
	}
	var names map[string]json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		return v, errf(syscall.EINVAL, "VERSION: capabilities is not a JSON object: %v", err)
	}
	var c capabilities
	if err := json.Unmarshal(raw, &c); err != nil {
		return v, errf(syscall.EINVAL, "VERSION: malformed capabilities: %v", err)
	}
	for k := range names {
		switch k {
		case "max_msg_fds", "max_data_xfer_size", "pgsizes", "max_dma_maps", "migration", "twin_socket", "write_multiple":
		default:
			v.Unknown = append(v.Unknown, "capabilities."+k)
		}
	}
	if c.MaxMsgFDs != nil {
		v.MaxMsgFDs = *c.MaxMsgFDs
	}
	if c.MaxDataXferSize != nil {
		if *c.MaxDataXferSize == 0 {
			return v, errf(syscall.EINVAL, "VERSION: max_data_xfer_size 0")
		}
		v.MaxDataXfer = *c.MaxDataXferSize
	}
	if c.PgSizes != nil && *c.PgSizes&(dmaPageSize-1) != 0 {
		return v, errf(syscall.EINVAL, "VERSION: pgsizes %#x includes pages smaller than 4 KiB", *c.PgSizes)
	}
	if c.WriteMultiple != nil {
		v.WriteMultiple = *c.WriteMultiple
	}
	return v, nil
}

// versionReply is the server's VFIO_USER_VERSION payload: version 0.0 (what QEMU's
// VFIO_USER_MAJOR_VER/MINOR_VER are) and its capabilities; "migration" is absent, so the
// client knows the device cannot migrate.
func versionReply(maxXfer uint32) []byte {
	caps := fmt.Sprintf(`{"capabilities":{"max_msg_fds":%d,"max_data_xfer_size":%d,"pgsizes":%d,"max_dma_maps":%d,"write_multiple":true}}`,
		maxMsgFDs, maxXfer, dmaPageSize, maxDMAMaps)
	b := make([]byte, versionFixedSize, versionFixedSize+len(caps)+1)
	b = append(b, caps...)
	return append(b, 0)
}
