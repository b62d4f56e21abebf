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
// A length above max is a protocol error: the stream cannot be trusted past it (a garbage
// header would otherwise have the reader skip up to 4 GiB, losing every frame after it), so
// the caller closes the connection.
type framer struct {
	max       int
	stage     []byte
	pos, have int // stage[pos:have] is unparsed
	scratch   []byte

	pending bool // a header was parsed; its frame waits for a buffer
	open    bool // a frame's payload is being received
	l, got  int
	dst     []byte // the frame's buffer; nil when the frame is discarded
}

func newFramer(max int) *framer {
	return &framer{max: max, stage: make([]byte, stagingSize)}
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

// frameIO is what pump needs from its surroundings. read reads into a then b without waiting
// (sockio.ErrTimeout when nothing is there). alloc gives the buffer for a frame of l bytes,
// nil to discard the frame, and ok false when no buffer is free now. emit hands over the
// frame that alloc's buffer now holds.
type frameIO struct {
	read  func(a, b []byte) (int, error)
	alloc func(l int) (dst []byte, ok bool)
	emit  func(l int)
}

// pump parses every whole frame already staged, then reads, at most budget times, until the
// socket runs dry, no buffer is free, or an error (the peer's EOF included, and a
// *frameTooLarge) ends the stream.
func (f *framer) pump(io frameIO, budget int) (pumpResult, error) {
	for reads := 0; ; {
		if r, err := f.parse(io); err != nil || r == pumpStalled {
			return r, err
		}
		if reads == budget {
			return pumpBudget, nil
		}
		reads++
		var into, after []byte
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
			if len(into) == rest {
				after = f.stage
				if f.l >= len(f.stage)/2 {
					// Large frames: stage only the next header, so the next payload too
					// is read straight into its buffer instead of copied twice.
					after = f.stage[:FrameHeaderLen]
				}
			}
		} else {
			if f.pos > 0 {
				f.have = copy(f.stage, f.stage[f.pos:f.have])
				f.pos = 0
			}
			into = f.stage[f.have:]
		}
		n, err := io.read(into, after)
		if errors.Is(err, sockio.ErrTimeout) {
			return pumpDry, nil
		}
		if err != nil {
			return pumpDry, err
		}
		if f.open {
			k := min(n, len(into))
			f.got += k
			f.have = n - k
		} else {
			f.have += n
		}
		if n < len(into)+len(after) {
			// A short read: the socket had nothing more at that moment.
			r, err := f.parse(io)
			if err != nil || r == pumpStalled {
				return r, err
			}
			return pumpDry, nil
		}
	}
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
			dst, ok := io.alloc(f.l)
			if !ok {
				return pumpStalled, nil
			}
			f.pending, f.open, f.dst = false, true, dst
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
		f.open, f.dst = false, nil
		io.emit(f.l)
	}
}

// holding reports whether a frame's buffer was allocated and not yet emitted (the caller
// returns it when the connection ends).
func (f *framer) holding() bool { return f.open && f.dst != nil }
