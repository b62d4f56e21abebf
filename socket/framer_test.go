package socket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/daqiri-go/daqiri/internal/sockio"
)

// refFrames is the framing's reference: the frames of a stream, and whether it stops at a
// length above max (the protocol error) rather than at the end of the data.
func refFrames(data []byte, max int) (frames [][]byte, tooLarge bool) {
	for len(data) >= FrameHeaderLen {
		l := int(binary.BigEndian.Uint32(data))
		if l > max {
			return frames, true
		}
		if len(data)-FrameHeaderLen < l {
			break
		}
		frames = append(frames, data[FrameHeaderLen:FrameHeaderLen+l])
		data = data[FrameHeaderLen+l:]
	}
	return frames, false
}

// runFramer feeds data through a framer in reads whose sizes come from chunks (0 = "would
// block"), with buffers and burst metadata sometimes refused, as the worker does. It checks the
// buffers' bookkeeping: every buffer handed out is emitted once with its frame's length,
// given back unused, or held by the framer when the stream ends; none is used twice.
func runFramer(t *testing.T, data, chunks []byte, limit int, discard bool) (frames [][]byte, err error) {
	stream := data
	k := 0
	next := func() byte {
		if len(chunks) == 0 {
			return 255
		}
		c := chunks[k%len(chunks)]
		k++
		return c
	}
	bufs := map[uint32][]byte{} // handed out, not yet emitted or freed
	nextID := uint32(1)
	allocs, emits, refused, busy, blocked := 0, 0, false, false, false
	fio := frameIO{
		read: func(iov [][]byte) (int, error) {
			if len(stream) == 0 {
				return 0, io.EOF
			}
			c := int(next())
			if c == 0 && !blocked {
				blocked = true
				return 0, sockio.ErrTimeout
			}
			blocked = false
			// A chunk is a number of bytes, or (above 200) a multiple of 4 KiB, so that
			// reads also end inside frames read ahead.
			if c > 200 {
				c = (c - 200) << 12
			}
			c = max(c, 1)
			n := 0
			for _, b := range iov {
				m := copy(b, stream[:min(c-n, len(stream))])
				stream = stream[m:]
				n += m
				if m < len(b) {
					break
				}
			}
			return n, nil
		},
		alloc: func(l int) ([]byte, uint32, bool) {
			allocs++
			if !refused && len(chunks) > 0 && chunks[allocs%len(chunks)]%5 == 0 {
				refused = true
				return nil, 0, false // no buffer now; the next attempt gets one
			}
			refused = false
			if discard {
				return nil, 0, true
			}
			id := nextID
			nextID++
			bufs[id] = make([]byte, l, l+8)
			return bufs[id], id, true
		},
		emit: func(id uint32, l int) bool {
			emits++
			if !busy && len(chunks) > 0 && chunks[emits%len(chunks)]%7 == 3 {
				busy = true
				return false // no burst metadata now; the next attempt gets it
			}
			busy = false
			if discard {
				frames = append(frames, nil)
				return true
			}
			b, ok := bufs[id]
			if !ok {
				t.Fatalf("emit of buffer %d, which is not handed out", id)
			}
			delete(bufs, id)
			if len(b) != l {
				t.Fatalf("emit %d bytes for a buffer of %d", l, len(b))
			}
			frames = append(frames, b)
			return true
		},
		free: func(id uint32) {
			if _, ok := bufs[id]; !ok {
				t.Fatalf("free of buffer %d, which is not handed out", id)
			}
			delete(bufs, id)
		},
	}
	f := newFramer(limit)
	for i := 0; i < 10*len(data)+100; i++ {
		_, err = f.pump(fio, 1+i%3)
		if err != nil {
			id, held := f.holding()
			if _, ok := bufs[id]; held && ok {
				delete(bufs, id)
			}
			if w := f.waiting(); len(w) > 0 {
				t.Fatalf("the stream ended (%v) with %d whole frames not emitted", err, len(w))
			}
			if len(bufs) > 0 {
				t.Fatalf("%d buffers neither emitted nor given back at the end", len(bufs))
			}
			return frames, err
		}
	}
	t.Fatalf("framer did not reach the end of %d bytes", len(data))
	return nil, nil
}

// checkFramer compares the framer with the reference on one stream.
func checkFramer(t *testing.T, data, chunks []byte, max int) {
	want, tooLarge := refFrames(data, max)
	for _, discard := range []bool{false, true} {
		got, err := runFramer(t, data, chunks, max, discard)
		var big *frameTooLarge
		switch {
		case tooLarge && !errors.As(err, &big):
			t.Fatalf("want a frame-too-large error, got %v", err)
		case !tooLarge && !errors.Is(err, io.EOF):
			t.Fatalf("want EOF, got %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("discard %v: %d frames, want %d", discard, len(got), len(want))
		}
		for i := range want {
			if !discard && !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d: %x, want %x", i, got[i], want[i])
			}
		}
	}
}

func stream(lens ...int) []byte {
	var b []byte
	for i, l := range lens {
		b = binary.BigEndian.AppendUint32(b, uint32(l))
		for j := 0; j < l; j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}

// TestFramer: small and large frames, split anywhere, with buffers sometimes refused, come
// out whole and in order; a length above the limit stops the stream with an error (issue 19
// item 4), also after frames that arrived whole before it.
func TestFramer(t *testing.T) {
	big := stream(3, 0, 9000, 20000, 1, 8192)
	for _, chunks := range [][]byte{nil, {1}, {7, 0, 3}, {255, 0}, {4, 4, 0, 13}} {
		checkFramer(t, big, chunks, 20000)
		checkFramer(t, append(stream(10, 2), binary.BigEndian.AppendUint32(nil, 0xffffffff)...), chunks, 2048)
		checkFramer(t, append(stream(2048), stream(2049)...), chunks, 2048)
	}
}

// FuzzFramer: the framer agrees with the reference on any stream, any read split and any
// pattern of refused buffers. Seeds: testdata/fuzz/FuzzFramer.
func FuzzFramer(f *testing.F) {
	f.Add(stream(3, 0, 100, 1), []byte{1, 0, 5}, uint16(100))
	f.Add(append(stream(10), 0xff, 0xff, 0xff, 0xff), []byte{2}, uint16(64))
	f.Fuzz(func(t *testing.T, data, chunks []byte, max uint16) {
		if len(data) > 1<<16 {
			return
		}
		checkFramer(t, data, chunks, int(max))
	})
}

// TestFramerReadAhead: streams of equal large frames, with now and then a frame of another
// length (a lost bet), split at random points (inside headers, inside frames read ahead, at
// their ends), with buffers sometimes refused, come out whole and in order, and every buffer
// taken for a bet is emitted or given back.
func TestFramerReadAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 5))
	for trial := 0; trial < 100; trial++ {
		base := aheadMin + rng.IntN(70000-aheadMin)
		var lens []int
		for range 1 + rng.IntN(40) {
			switch rng.IntN(10) {
			case 0:
				lens = append(lens, rng.IntN(80000)) // another length
			case 1:
				lens = append(lens, base+1-2*rng.IntN(2)) // one byte off
			default:
				lens = append(lens, base)
			}
		}
		// Mostly reads of 4 KiB multiples (whole frames and more), some of a few bytes.
		chunks := make([]byte, 1+rng.IntN(8))
		for i := range chunks {
			chunks[i] = byte(201 + rng.IntN(55))
			if rng.IntN(5) == 0 {
				chunks[i] = byte(rng.IntN(200))
			}
		}
		checkFramer(t, stream(lens...), chunks, 80000)
	}
}

// TestFramerReadsAhead: with the socket holding many equal 64000-byte frames, one read takes
// several of them, each into its own buffer (upstream of this, a read per frame).
func TestFramerReadsAhead(t *testing.T) {
	const frames, l = 90, 64000
	data := stream(slices.Repeat([]int{l}, frames)...)
	reads, emitted, freed := 0, 0, 0
	fio := frameIO{
		read: func(iov [][]byte) (int, error) {
			if len(data) == 0 {
				return 0, io.EOF
			}
			reads++
			n := 0
			for _, b := range iov {
				m := copy(b, data)
				data = data[m:]
				n += m
			}
			return n, nil
		},
		alloc: func(l int) ([]byte, uint32, bool) { return make([]byte, l), 0, true },
		emit: func(_ uint32, n int) bool {
			if n != l {
				t.Fatalf("frame of %d bytes, want %d", n, l)
			}
			emitted++
			return true
		},
		free: func(uint32) { freed++ },
	}
	f := newFramer(l)
	for i := 0; i < 100; i++ {
		if _, err := f.pump(fio, 4); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	perRead := 1 + min(maxAhead, aheadBytes/(l+FrameHeaderLen))
	if emitted != frames || reads > 2+frames/perRead+1 {
		t.Fatalf("%d frames in %d reads (%d buffers given back), want %d in at most %d", emitted, reads, freed, frames, 2+frames/perRead+1)
	}
}
