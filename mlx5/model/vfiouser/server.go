package vfiouser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Options configure a Server.
type Options struct {
	// Logf receives one line per refused or malformed message and per session event;
	// nil discards them.
	Logf func(format string, args ...any)
	// MaxDataXfer is the largest REGION_READ/WRITE count the server accepts, advertised as
	// max_data_xfer_size; default 1 MiB (the spec's default).
	MaxDataXfer uint32
}

// Server serves one Device to vfio-user clients, one session at a time.
type Server struct {
	dev  Device
	opts Options
}

// NewServer returns a server for dev.
func NewServer(dev Device, opts Options) *Server {
	if opts.MaxDataXfer == 0 {
		opts.MaxDataXfer = defaultMaxDataXfr
	}
	return &Server{dev: dev, opts: opts}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// ListenAndServe listens on the unix socket path (removing a stale socket file there
// first), calls ready once it accepts connections, serves the first client until it
// disconnects or ctx ends, and removes the socket. The error is nil when the client
// disconnected cleanly or ctx ended.
func (s *Server) ListenAndServe(ctx context.Context, path string, ready func()) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("vfio-user: listen: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	if ready != nil {
		ready()
	}
	c, err := ln.AcceptUnix()
	ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("vfio-user: accept: %w", err)
	}
	return s.ServeConn(ctx, c)
}

// ServeConn runs one session on c until the client disconnects, a fatal protocol error
// happens, or ctx ends; it closes c. At the end the device is detached, every eventfd is
// closed and all client memory is unmapped. The error is nil for a clean disconnect
// (end of stream at a message boundary) or ctx's end.
func (s *Server) ServeConn(ctx context.Context, c *net.UnixConn) error {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	ss := &session{s: s, c: conn{c}, irqs: newIRQs(s.dev)}
	s.dev.Attach(ss.irqs)
	err := ss.run()
	ss.teardown()
	c.Close()
	if ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		s.logf("vfio-user: client disconnected")
		return nil
	}
	s.logf("vfio-user: session ended: %v", err)
	return err
}

// session is one client's connection state.
type session struct {
	s         *Server
	c         conn
	versioned bool
	peer      Version
	irqs      *IRQs
	dma       dmaTable
	hdr       [HeaderSize]byte
	stats     sessionStats
}

// sessionStats are counted for the log line at the session's end.
type sessionStats struct {
	msgs, refused, maps, fdMaps, unmaps, peakWindows int
}

func (ss *session) maxMsg() uint32 { return HeaderSize + regionRWSize + ss.s.opts.MaxDataXfer }

func (ss *session) run() error {
	for {
		h, fds, err := ss.c.readHeader(ss.hdr[:])
		var fe *fatalError
		if errors.As(err, &fe) {
			if !errors.Is(err, io.EOF) {
				ss.s.logf("vfio-user: %v", err)
			}
			return err
		}
		if err == nil && h.Size > ss.maxMsg() {
			err = errf(syscall.E2BIG, "message %d (%v): size %d is over the %d-byte limit", h.ID, h.Command, h.Size, ss.maxMsg())
		}
		if err != nil {
			// Framed but refused: skip the payload so that the next message is found.
			closeFDs(fds)
			ss.s.logf("vfio-user: %v", err)
			if derr := ss.c.discard(int64(h.Size) - HeaderSize); derr != nil {
				return derr
			}
			if h.Flags&FlagTypeMask != TypeReply && h.Flags&FlagNoReply == 0 {
				if werr := ss.replyError(h, err); werr != nil {
					return werr
				}
			}
			continue
		}
		p := make([]byte, h.Size-HeaderSize)
		if err := ss.c.readFull(p); err != nil {
			closeFDs(fds)
			ss.s.logf("vfio-user: message %d (%v): %v", h.ID, h.Command, err)
			return err
		}
		if err := ss.handle(Request{Header: h, Payload: p, FDs: fds}); err != nil {
			return err
		}
	}
}

// handle runs one framed message and replies; only a socket error is returned.
func (ss *session) handle(r Request) error {
	if r.Flags&FlagTypeMask == TypeReply {
		// This server sends no requests, so no reply can be expected.
		closeFDs(r.FDs)
		ss.s.logf("vfio-user: unexpected reply %d (%v) from the client: ignored", r.ID, r.Command)
		return nil
	}
	reply, err := ss.dispatch(r)
	ss.stats.msgs++
	if err != nil {
		ss.stats.refused++
		ss.s.logf("vfio-user: message %d (%v) refused: %v", r.ID, r.Command, err)
	}
	if r.Flags&FlagNoReply != 0 {
		return nil
	}
	if err != nil {
		return ss.replyError(r.Header, err)
	}
	h := Header{ID: r.ID, Command: r.Command, Size: uint32(HeaderSize + len(reply)), Flags: TypeReply}
	return ss.c.write(append(h.Append(make([]byte, 0, int(h.Size))), reply...))
}

func (ss *session) replyError(h Header, err error) error {
	rh := Header{ID: h.ID, Command: h.Command, Size: HeaderSize, Flags: TypeReply | FlagError, Error: uint32(errnoOf(err))}
	return ss.c.write(rh.Append(nil))
}

// dispatch checks and runs one command; it owns r.FDs (closing those it does not keep).
func (ss *session) dispatch(r Request) (reply []byte, err error) {
	if r.Flags&FlagError != 0 {
		closeFDs(r.FDs)
		return nil, errf(syscall.EINVAL, "the Error flag is set in a command")
	}
	if !ss.versioned && r.Command != CmdVersion {
		closeFDs(r.FDs)
		return nil, errf(syscall.EINVAL, "%v before VERSION", r.Command)
	}
	// Commands that take descriptors take them themselves; all others must come without.
	if r.Command != CmdDMAMap && r.Command != CmdDeviceSetIRQs && len(r.FDs) != 0 {
		closeFDs(r.FDs)
		return nil, errf(syscall.EINVAL, "%v came with %d file descriptors, it takes none", r.Command, len(r.FDs))
	}
	p := r.Payload
	switch r.Command {
	case CmdVersion:
		return ss.version(p)
	case CmdDMAMap:
		return nil, ss.dmaMap(p, r.FDs)
	case CmdDMAUnmap:
		return ss.dmaUnmap(p)
	case CmdDeviceGetInfo:
		return ss.deviceInfo(p)
	case CmdDeviceGetRegionInfo:
		return ss.regionInfo(p)
	case CmdDeviceGetIRQInfo:
		return ss.irqInfo(p)
	case CmdDeviceSetIRQs:
		return nil, ss.setIRQs(p, r.FDs)
	case CmdRegionRead:
		return ss.regionRead(p)
	case CmdRegionWrite:
		return ss.regionWrite(p)
	case CmdRegionWriteMulti:
		return ss.writeMulti(p)
	case CmdDeviceReset:
		if len(p) != 0 {
			return nil, errf(syscall.EINVAL, "DEVICE_RESET with a %d-byte payload, want none", len(p))
		}
		return nil, ss.s.dev.Reset()
	case CmdDeviceGetRegionIOFDs, CmdDirtyPages, CmdDeviceFeature, CmdMigDataRead, CmdMigDataWrite:
		return nil, errf(syscall.ENOTSUP, "%v is not implemented (no ioregionfds, no migration)", r.Command)
	case CmdDMARead, CmdDMAWrite:
		return nil, errf(syscall.EINVAL, "%v goes from server to client", r.Command)
	}
	return nil, errf(syscall.ENOSYS, "unknown command %d", uint16(r.Command))
}

func (ss *session) version(p []byte) ([]byte, error) {
	if ss.versioned {
		return nil, errf(syscall.EINVAL, "VERSION again")
	}
	v, err := ParseVersion(p)
	if err != nil {
		return nil, err
	}
	if v.Major != 0 {
		return nil, errf(syscall.ENOTSUP, "VERSION: major version %d, the server speaks 0", v.Major)
	}
	if len(v.Unknown) != 0 {
		ss.s.logf("vfio-user: VERSION: unknown capabilities ignored: %v", v.Unknown)
	}
	ss.peer = v
	ss.versioned = true
	ss.s.logf("vfio-user: client speaks %d.%d (max_msg_fds %d, max_data_xfer_size %d)", v.Major, v.Minor, v.MaxMsgFDs, v.MaxDataXfer)
	return versionReply(ss.s.opts.MaxDataXfer), nil
}

func (ss *session) dmaMap(p []byte, fds []int) error {
	if len(p) != dmaMapSize {
		closeFDs(fds)
		return errf(syscall.EINVAL, "DMA_MAP: payload of %d bytes, want %d", len(p), dmaMapSize)
	}
	argsz, flags := le.Uint32(p[0:]), le.Uint32(p[4:])
	off, iova, size := le.Uint64(p[8:]), le.Uint64(p[16:]), le.Uint64(p[24:])
	bad := func(format string, args ...any) error {
		closeFDs(fds)
		return errf(syscall.EINVAL, "DMA_MAP of %#x+%#x: "+format, append([]any{iova, size}, args...)...)
	}
	switch {
	case argsz < dmaMapSize:
		return bad("argsz %d < %d", argsz, dmaMapSize)
	case flags&^(dmaFlagRead|dmaFlagWrite) != 0:
		return bad("unknown flags %#x", flags)
	case flags == 0:
		return bad("neither readable nor writeable")
	case size == 0 || size%dmaPageSize != 0 || iova%dmaPageSize != 0:
		return bad("not whole %d-byte pages", dmaPageSize)
	case iova+size < iova:
		return bad("wraps the address space")
	case len(fds) > 1:
		return bad("%d file descriptors, want at most 1", len(fds))
	case len(fds) == 0 && off != 0:
		return bad("offset %#x without a file descriptor", off)
	}
	if m, ok := ss.dma.overlaps(iova, size); ok {
		closeFDs(fds)
		return errf(syscall.EEXIST, "DMA_MAP of %#x+%#x overlaps the window %#x+%#x", iova, size, m.iova, m.size)
	}
	if len(ss.dma.maps) >= maxDMAMaps {
		closeFDs(fds)
		return errf(syscall.ENOSPC, "DMA_MAP: %d windows already (max_dma_maps)", len(ss.dma.maps))
	}
	m := dmaMap{iova: iova, size: size, perm: Perm(flags)}
	if len(fds) == 1 {
		if off%dmaPageSize != 0 {
			closeFDs(fds)
			return errf(syscall.EINVAL, "DMA_MAP of %#x+%#x: file offset %#x is not page-aligned", iova, size, off)
		}
		mem, err := ss.dma.mapFD(fds[0], off, size, m.perm)
		if err != nil {
			return err
		}
		m.mem = mem
		if err := ss.s.dev.MapDMA(iova, mem, m.perm); err != nil {
			return errf(errnoOf(err), "DMA_MAP of %#x+%#x: the device refused: %v", iova, size, err)
		}
	} else {
		// Memory the client did not share (ROM, RAM without share=on): the window exists,
		// but the device cannot reach it; DMA_READ/DMA_WRITE are not implemented.
		ss.s.logf("vfio-user: DMA_MAP of %#x+%#x without a file descriptor: recorded, not reachable by the device", iova, size)
	}
	ss.dma.insert(m)
	ss.stats.maps++
	if m.mem != nil {
		ss.stats.fdMaps++
	}
	ss.stats.peakWindows = max(ss.stats.peakWindows, len(ss.dma.maps))
	return nil
}

func (ss *session) dmaUnmap(p []byte) ([]byte, error) {
	if len(p) != dmaUnmapSize {
		return nil, errf(syscall.EINVAL, "DMA_UNMAP: payload of %d bytes, want %d", len(p), dmaUnmapSize)
	}
	argsz, flags := le.Uint32(p[0:]), le.Uint32(p[4:])
	iova, size := le.Uint64(p[8:]), le.Uint64(p[16:])
	if argsz < dmaUnmapSize {
		return nil, errf(syscall.EINVAL, "DMA_UNMAP: argsz %d < %d", argsz, dmaUnmapSize)
	}
	var gone []dmaMap
	switch flags {
	case 0:
		// A range may end at the very top of the address space (QEMU's vIOMMU unmaps
		// [x, 2^64) that way), not beyond it.
		if size == 0 || iova+size-1 < iova {
			return nil, errf(syscall.EINVAL, "DMA_UNMAP of %#x+%#x: empty or wrapping range", iova, size)
		}
		var err error
		if gone, err = ss.dma.removeRange(iova, size); err != nil {
			return nil, err
		}
	case dmaUnmapAll:
		// linux/vfio.h wants address and size 0 with VFIO_DMA_UNMAP_FLAG_ALL; QEMU's
		// listener sets the flag for a region spanning the whole 64-bit space and may pass
		// that region's start, so any address is taken, noted in the log.
		if iova != 0 || size != 0 {
			ss.s.logf("vfio-user: DMA_UNMAP all with address %#x size %#x (linux/vfio.h wants 0 and 0): unmapping everything", iova, size)
		}
		gone = ss.dma.removeAll()
	case dmaUnmapDirty:
		return nil, errf(syscall.ENOTSUP, "DMA_UNMAP: dirty page bitmaps are not supported")
	default:
		return nil, errf(syscall.EINVAL, "DMA_UNMAP: flags %#x", flags)
	}
	var firstErr error
	for _, m := range gone {
		if m.mem == nil {
			continue
		}
		if err := ss.s.dev.UnmapDMA(m.iova, m.size); err != nil && firstErr == nil {
			firstErr = errf(errnoOf(err), "DMA_UNMAP of %#x+%#x: the device: %v", m.iova, m.size, err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	ss.stats.unmaps += len(gone)
	// The reply repeats the request (vfio-user.rst VFIO_USER_DMA_UNMAP "Reply").
	return append([]byte(nil), p...), nil
}

func (ss *session) deviceInfo(p []byte) ([]byte, error) {
	if len(p) != deviceInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_INFO: payload of %d bytes, want %d", len(p), deviceInfoSize)
	}
	if a := le.Uint32(p[0:]); a < deviceInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_INFO: argsz %d < %d", a, deviceInfoSize)
	}
	b := make([]byte, deviceInfoSize)
	le.PutUint32(b[0:], deviceInfoSize)
	le.PutUint32(b[4:], deviceFlagsReset|deviceFlagsPCI)
	le.PutUint32(b[8:], NumRegions)
	le.PutUint32(b[12:], NumIRQs)
	return b, nil
}

func (ss *session) regionInfo(p []byte) ([]byte, error) {
	if len(p) != regionInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_REGION_INFO: payload of %d bytes, want %d", len(p), regionInfoSize)
	}
	argsz, index := le.Uint32(p[0:]), le.Uint32(p[8:])
	if argsz < regionInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_REGION_INFO: argsz %d < %d", argsz, regionInfoSize)
	}
	if index >= NumRegions {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_REGION_INFO: region %d, the device has %d", index, NumRegions)
	}
	ri := ss.s.dev.RegionInfo(index)
	b := make([]byte, regionInfoSize)
	le.PutUint32(b[0:], regionInfoSize)
	var fl uint32
	if ri.Size != 0 && ri.Read {
		fl |= regionFlagRead
	}
	if ri.Size != 0 && ri.Write {
		fl |= regionFlagWrite
	}
	le.PutUint32(b[4:], fl)
	le.PutUint32(b[8:], index)
	le.PutUint64(b[16:], ri.Size)
	return b, nil
}

func (ss *session) irqInfo(p []byte) ([]byte, error) {
	if len(p) != irqInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_IRQ_INFO: payload of %d bytes, want %d", len(p), irqInfoSize)
	}
	argsz, index := le.Uint32(p[0:]), le.Uint32(p[8:])
	if argsz < irqInfoSize {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_IRQ_INFO: argsz %d < %d", argsz, irqInfoSize)
	}
	if index >= NumIRQs {
		return nil, errf(syscall.EINVAL, "DEVICE_GET_IRQ_INFO: index %d, the device has %d", index, NumIRQs)
	}
	ii := ss.s.dev.IRQInfo(index)
	var fl uint32
	if ii.Count != 0 {
		fl |= irqInfoEventfd
		if ii.Maskable {
			fl |= irqInfoMaskable
		}
		if ii.AutoMasked {
			fl |= irqInfoAutomasked
		}
		if ii.NoResize {
			fl |= irqInfoNoResize
		}
	}
	b := make([]byte, irqInfoSize)
	le.PutUint32(b[0:], irqInfoSize)
	le.PutUint32(b[4:], fl)
	le.PutUint32(b[8:], index)
	le.PutUint32(b[12:], ii.Count)
	return b, nil
}

func (ss *session) setIRQs(p []byte, fds []int) error {
	if len(p) < irqSetSize {
		closeFDs(fds)
		return errf(syscall.EINVAL, "DEVICE_SET_IRQS: payload of %d bytes, want at least %d", len(p), irqSetSize)
	}
	argsz, flags := le.Uint32(p[0:]), le.Uint32(p[4:])
	index, start, count := le.Uint32(p[8:]), le.Uint32(p[12:]), le.Uint32(p[16:])
	if argsz < irqSetSize {
		closeFDs(fds)
		return errf(syscall.EINVAL, "DEVICE_SET_IRQS: argsz %d < %d", argsz, irqSetSize)
	}
	return ss.irqs.set(flags, index, start, count, p[irqSetSize:], fds)
}

// access checks a region access of count bytes at off.
func (ss *session) access(what string, index uint32, off uint64, count uint32, write bool) error {
	if index >= NumRegions {
		return errf(syscall.EINVAL, "%s: region %d, the device has %d", what, index, NumRegions)
	}
	if count == 0 {
		return errf(syscall.EINVAL, "%s: count 0", what)
	}
	if count > ss.s.opts.MaxDataXfer {
		return errf(syscall.E2BIG, "%s: count %d over max_data_xfer_size %d", what, count, ss.s.opts.MaxDataXfer)
	}
	ri := ss.s.dev.RegionInfo(index)
	if off >= ri.Size || uint64(count) > ri.Size-off {
		return errf(syscall.EINVAL, "%s: %d bytes at %#x are outside region %d (%#x bytes)", what, count, off, index, ri.Size)
	}
	if write && !ri.Write || !write && !ri.Read {
		return errf(syscall.EPERM, "%s: region %d does not allow it", what, index)
	}
	return nil
}

func (ss *session) regionRead(p []byte) ([]byte, error) {
	if len(p) != regionRWSize {
		return nil, errf(syscall.EINVAL, "REGION_READ: payload of %d bytes, want %d", len(p), regionRWSize)
	}
	off, index, count := le.Uint64(p[0:]), le.Uint32(p[8:]), le.Uint32(p[12:])
	if err := ss.access("REGION_READ", index, off, count, false); err != nil {
		return nil, err
	}
	b := make([]byte, regionRWSize+int(count))
	copy(b, p)
	if err := ss.s.dev.ReadRegion(index, off, b[regionRWSize:]); err != nil {
		return nil, errf(errnoOf(err), "REGION_READ of %d bytes at %#x of region %d: %v", count, off, index, err)
	}
	return b, nil
}

func (ss *session) regionWrite(p []byte) ([]byte, error) {
	if len(p) < regionRWSize {
		return nil, errf(syscall.EINVAL, "REGION_WRITE: payload of %d bytes, want at least %d", len(p), regionRWSize)
	}
	off, index, count := le.Uint64(p[0:]), le.Uint32(p[8:]), le.Uint32(p[12:])
	if uint64(len(p)-regionRWSize) != uint64(count) {
		return nil, errf(syscall.EINVAL, "REGION_WRITE: count %d with %d data bytes", count, len(p)-regionRWSize)
	}
	if err := ss.access("REGION_WRITE", index, off, count, true); err != nil {
		return nil, err
	}
	if err := ss.s.dev.WriteRegion(index, off, p[regionRWSize:]); err != nil {
		return nil, errf(errnoOf(err), "REGION_WRITE of %d bytes at %#x of region %d: %v", count, off, index, err)
	}
	return append([]byte(nil), p[:regionRWSize]...), nil
}

// writeMulti applies REGION_WRITE_MULTI: up to 200 writes of at most 8 bytes each (QEMU's
// VFIO_USER_MULTI_MAX and VFIO_USER_MULTI_DATA). All are checked before any is applied.
func (ss *session) writeMulti(p []byte) ([]byte, error) {
	if len(p) < writeMultiFixed {
		return nil, errf(syscall.EINVAL, "REGION_WRITE_MULTI: payload of %d bytes", len(p))
	}
	n := le.Uint64(p[0:])
	if n == 0 || n > writeMultiMax || uint64(len(p)) != writeMultiFixed+n*writeOneSize {
		return nil, errf(syscall.EINVAL, "REGION_WRITE_MULTI: wr_cnt %d with a %d-byte payload", n, len(p))
	}
	for i := range n {
		w := p[writeMultiFixed+i*writeOneSize:]
		off, index, count := le.Uint64(w[0:]), le.Uint32(w[8:]), le.Uint32(w[12:])
		if count > writeOneMaxData {
			return nil, errf(syscall.EINVAL, "REGION_WRITE_MULTI: write %d has count %d > %d", i, count, writeOneMaxData)
		}
		if err := ss.access(fmt.Sprintf("REGION_WRITE_MULTI write %d", i), index, off, count, true); err != nil {
			return nil, err
		}
	}
	for i := range n {
		w := p[writeMultiFixed+i*writeOneSize:]
		off, index, count := le.Uint64(w[0:]), le.Uint32(w[8:]), le.Uint32(w[12:])
		if err := ss.s.dev.WriteRegion(index, off, w[16:16+count]); err != nil {
			return nil, errf(errnoOf(err), "REGION_WRITE_MULTI write %d (%d bytes at %#x of region %d): %v", i, count, off, index, err)
		}
	}
	return append([]byte(nil), p[:writeMultiFixed]...), nil
}

// teardown ends the session as vfio-user.rst "Client Disconnection" says: the device stops,
// interrupt descriptors are closed, every window is removed and client memory unmapped.
func (ss *session) teardown() {
	st := ss.stats
	ss.s.logf("vfio-user: session: %d messages, %d refused; %d DMA windows mapped (%d with a descriptor), %d unmapped, at most %d at once",
		st.msgs, st.refused, st.maps, st.fdMaps, st.unmaps, st.peakWindows)
	ss.s.dev.Detach()
	ss.irqs.close()
	for _, m := range ss.dma.removeAll() {
		if m.mem != nil {
			if err := ss.s.dev.UnmapDMA(m.iova, m.size); err != nil {
				ss.s.logf("vfio-user: teardown: unmap of %#x+%#x: %v", m.iova, m.size, err)
			}
		}
	}
	ss.dma.release()
}
