package socket

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/daqiri-go/daqiri/internal/sockio"
)

// framer splits one TCP connection's byte stream into frames (FrameHeaderLen-byte big-endian
// length, then that many bytes). Small frames are parsed out of a staging buffer, many per
// read; the rest of a frame that was not staged is read straight into its packet buffer
// together with the next staging fill (one scatter read), so large frames are copied only
// once, by the kernel.
//
// Streams of equal large frames (a sensor's fixed-size messages) are read several frames per
// call: once a frame has the length of the one before it, the read that completes it also
// reads the next ones, each header into a slot of its own and each payload straight into a
// buffer taken for it, on the bet that they have that length too. A header that says
// otherwise loses the bet: the bytes read after it are parsed from staging instead (one more
// copy for those frames, none lost), and the next bet waits for two equal lengths again.
//
// A length above max is a protocol error: the stream cannot be trusted past it (a garbage
// header would otherwise have the reader skip up to 4 GiB, losing every frame after it), so
// the caller closes the connection.
type framer struct {
	max       int
	small     []byte // the staging buffer
	stage     []byte // small, or bytes read ahead on a lost bet, parsed from here
	pos, have int    // stage[pos:have] is unparsed
	scratch   []byte // where discarded payloads are read to
	big       []byte // backing of stage after a lost bet, kept for the next one

	pending bool // a header was parsed; its frame waits for a buffer
	open    bool // a frame's payload is being received
	l, got  int
	dst     []byte // the frame's buffer; nil when the frame is discarded
	id      uint32 // alloc's name for dst
	prev    int    // length of the last frame emitted; -1 before the first
	taken   uint64 // bytes read from the socket so far

	iov   [][]byte
	hdrs  [maxAhead][FrameHeaderLen]byte
	ahead []aheadBuf   // buffers taken for the frames this read bets on
	ready []wholeFrame // frames emit could not take yet, in stream order
}

// wholeFrame is a received frame waiting to be emitted.
type wholeFrame struct {
	id uint32
	l  int
}

// aheadBuf is a buffer taken for a frame a read bets on.
type aheadBuf struct {
	dst []byte
	id  uint32
}

const (
	// maxAhead bounds the frames one read bets on, and aheadBytes their bytes. Larger
	// reads were slower on the 16-core host (TCP 64 KB frames: 45 Gb/s reading none ahead,
	// 35-43 with 512 KiB, 38.5 with 1 MiB): the socket stays locked for the whole copy,
	// the window reopens only after it, and more buffers are in flight, out of the cache.
	maxAhead   = 15
	aheadBytes = 128 << 10
	// aheadMin is the smallest frame a read bets on: smaller ones are cheaper to copy out
	// of staging, many per read, than to scatter two iovecs each.
	aheadMin = 4 << 10
)

func newFramer(max int) *framer {
	s := make([]byte, stagingSize)
	return &framer{max: max, small: s, stage: s, prev: -1}
}

// frameTooLarge is the protocol error of a length above the connection's limit.
type frameTooLarge struct{ length, max int }

func (e *frameTooLarge) Error() string {
	return fmt.Sprintf("frame length %d exceeds max_payload_size %d", e.length, e.max)
}

// pumpResult says why pump returned without an error.
type pumpResult int

const (
	pumpDry     pumpResult = iota // the socket had no more bytes
	pumpStalled                   // no buffer for the next frame: try again later
	pumpBudget                    // the read budget is spent; more may be waiting
)

// frameIO is what pump needs from its surroundings. read reads into the slices in order
// without waiting (sockio.ErrTimeout when nothing is there). alloc gives the buffer for a
// frame of l bytes and a name for it, a nil buffer to discard the frame, and ok false when no
// buffer is free now. emit hands over the frame that buffer id now holds, or reports false
// when it cannot take it now (no burst metadata free): the framer then keeps the frame and
// offers it again, in order, before anything else. free returns a buffer that received no
// frame (one taken for a bet that was lost or not yet settled).
type frameIO struct {
	read  func(iov [][]byte) (int, error)
	alloc func(l int) (dst []byte, id uint32, ok bool)
	emit  func(id uint32, l int) bool
	free  func(id uint32)
}

// pump parses every whole frame already staged, then reads, at most budget times, until the
// socket runs dry, no buffer is free, or an error (the peer's EOF included, and a
// *frameTooLarge) ends the stream.
func (f *framer) pump(io frameIO, budget int) (pumpResult, error) {
	for reads := 0; ; {
		if !f.emitReady(io) {
			return pumpStalled, nil
		}
		if r, err := f.parse(io); err != nil || r == pumpStalled {
			return r, err
		}
		if reads == budget {
			return pumpBudget, nil
		}
		reads++
		// parse left at most a partial header staged: a lost bet's bytes are all parsed.
		if &f.stage[0] != &f.small[0] {
			f.have = copy(f.small, f.stage[f.pos:f.have])
			f.pos, f.stage = 0, f.small
		}
		iov := f.iov[:0]
		var into []byte
		if f.open {
			// The frame continues on the socket (parse emptied the staging buffer): read
			// the rest straight into its buffer, and whatever follows into the staging
			// buffer once this read can complete the frame.
			f.pos, f.have = 0, 0
			rest := f.l - f.got
			if f.dst != nil {
				into = f.dst[f.got:f.l]
			} else {
				if f.scratch == nil {
					f.scratch = make([]byte, 4096)
				}
				into = f.scratch[:min(rest, len(f.scratch))]
			}
			iov = append(iov, into)
			if len(into) == rest {
				switch {
				case f.dst != nil && f.l == f.prev && f.l >= aheadMin:
					iov = f.bet(io, iov)
					iov = append(iov, f.stage[:FrameHeaderLen])
				case f.l >= len(f.stage)/2:
					// Large frames: stage only the next header, so the next payload
					// too is read straight into its buffer instead of copied twice.
					iov = append(iov, f.stage[:FrameHeaderLen])
				default:
					iov = append(iov, f.stage)
				}
			}
		} else {
			if f.pos > 0 {
				f.have = copy(f.stage, f.stage[f.pos:f.have])
				f.pos = 0
			}
			into = f.stage[f.have:]
			iov = append(iov, into)
		}
		f.iov = iov
		n, err := io.read(iov)
		f.taken += uint64(n)
		if errors.Is(err, sockio.ErrTimeout) {
			f.dropBets(io, 0)
			return pumpDry, nil
		}
		if err != nil {
			f.dropBets(io, 0)
			return pumpDry, err
		}
		full := n == total(iov)
		if f.open {
			k := min(n, len(into))
			f.got += k
			f.settle(io, n-k)
			if len(f.ready) > 0 {
				return pumpStalled, nil
			}
		} else {
			f.have += n
		}
		if !full {
			// A short read: the socket had nothing more at that moment.
			r, err := f.parse(io)
			if err != nil || r == pumpStalled {
				return r, err
			}
			return pumpDry, nil
		}
	}
}

// bet takes buffers for the frames expected after the open one (of its length, each after
// its header) and adds their slots to iov.
func (f *framer) bet(io frameIO, iov [][]byte) [][]byte {
	k := min(maxAhead, aheadBytes/(f.l+FrameHeaderLen))
	for i := 0; i < k; i++ {
		dst, id, ok := io.alloc(f.l)
		if !ok {
			break
		}
		if dst == nil {
			// alloc may discard frames: then there is nothing to read ahead into.
			io.free(id)
			break
		}
		f.ahead = append(f.ahead, aheadBuf{dst: dst[:f.l], id: id})
		iov = append(iov, f.hdrs[i][:], dst[:f.l])
	}
	return iov
}

// dropBets returns the buffers of the bets from i on.
func (f *framer) dropBets(io frameIO, i int) {
	for _, a := range f.ahead[i:] {
		io.free(a.id)
	}
	f.ahead = f.ahead[:0]
}

// settle accounts for the n bytes a read put after the open frame's rest: the frames read
// ahead (each header checked against the bet), then the staging slot.
func (f *framer) settle(io frameIO, n int) {
	if f.got < f.l {
		f.dropBets(io, 0)
		return
	}
	f.finish(io)
	for i, a := range f.ahead {
		h := f.hdrs[i][:]
		m := min(n, FrameHeaderLen)
		if m < FrameHeaderLen {
			f.pos, f.have = 0, copy(f.stage, h[:m])
			f.dropBets(io, i)
			return
		}
		n -= m
		if l := int(binary.BigEndian.Uint32(h)); l != len(a.dst) {
			// Lost: what follows this header is not where the bet put it.
			f.restage(i, n)
			f.dropBets(io, i)
			f.prev = -1
			return
		}
		m = min(n, len(a.dst))
		n -= m
		f.open, f.l, f.got, f.dst, f.id = true, len(a.dst), m, a.dst, a.id
		if m < f.l {
			f.dropBets(io, i+1)
			return
		}
		f.finish(io)
	}
	f.ahead = f.ahead[:0]
	f.pos, f.have = 0, n // the staging slot: the next header, or part of it
}

// restage copies the n bytes a read put after bet i's header, that header first, into the
// staging area in stream order (the slots after it, then the staging slot), for parse.
func (f *framer) restage(i, n int) {
	need := FrameHeaderLen + n
	if cap(f.big) < need {
		f.big = make([]byte, max(need, 2*len(f.small)))
	}
	b := f.big[:cap(f.big)]
	w := copy(b, f.hdrs[i][:])
	for j := i; j < len(f.ahead) && w < need; j++ {
		if j > i {
			w += copy(b[w:need], f.hdrs[j][:])
		}
		w += copy(b[w:need], f.ahead[j].dst)
	}
	w += copy(b[w:need], f.small[:FrameHeaderLen])
	f.stage, f.pos, f.have = b, 0, w
}

// finish hands over the open frame, or queues it behind those emit could not take yet.
func (f *framer) finish(io frameIO) {
	f.open = false
	f.prev = f.l
	id := f.id
	if f.dst == nil {
		id = 0
	}
	f.dst = nil
	if len(f.ready) > 0 || !io.emit(id, f.l) {
		f.ready = append(f.ready, wholeFrame{id: id, l: f.l})
	}
}

// emitReady offers the frames waiting for emit again; it reports whether none is left.
func (f *framer) emitReady(io frameIO) bool {
	k := 0
	for k < len(f.ready) && io.emit(f.ready[k].id, f.ready[k].l) {
		k++
	}
	f.ready = f.ready[:copy(f.ready, f.ready[k:])]
	return len(f.ready) == 0
}

// parse takes every whole frame out of the staged bytes and completes an open frame from
// them; it stops when a frame needs more bytes from the socket or no buffer is free.
func (f *framer) parse(io frameIO) (pumpResult, error) {
	for {
		if !f.open && !f.pending {
			if f.have-f.pos < FrameHeaderLen {
				return pumpDry, nil
			}
			l := int(binary.BigEndian.Uint32(f.stage[f.pos:]))
			if l > f.max {
				return pumpDry, &frameTooLarge{length: l, max: f.max}
			}
			f.pos += FrameHeaderLen
			f.l, f.got, f.pending = l, 0, true
		}
		if f.pending {
			dst, id, ok := io.alloc(f.l)
			if !ok {
				return pumpStalled, nil
			}
			f.pending, f.open, f.dst, f.id = false, true, dst, id
		}
		n := min(f.l-f.got, f.have-f.pos)
		if f.dst != nil {
			copy(f.dst[f.got:f.l], f.stage[f.pos:f.pos+n])
		}
		f.pos += n
		f.got += n
		if f.got < f.l {
			return pumpDry, nil // the rest is on the socket
		}
		f.finish(io)
		if len(f.ready) > 0 {
			return pumpStalled, nil
		}
	}
}

// holding reports the buffer of a frame allocated and not yet complete (the caller returns it
// when the connection ends).
func (f *framer) holding() (id uint32, ok bool) { return f.id, f.open && f.dst != nil }

// waiting returns the whole frames emit has not taken yet and forgets them (the caller
// delivers or returns them when the connection ends).
func (f *framer) waiting() []wholeFrame {
	w := f.ready
	f.ready = nil
	return w
}

func total(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}
