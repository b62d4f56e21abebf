package socket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
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
// block"), with buffers refused whenever refuse says so, as the worker does.
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
	var cur []byte
	allocs, refused, blocked := 0, false, false
	fio := frameIO{
		read: func(a, b []byte) (int, error) {
			if len(stream) == 0 {
				return 0, io.EOF
			}
			c := int(next())
			if c == 0 && !blocked {
				blocked = true
				return 0, sockio.ErrTimeout
			}
			blocked = false
			c = max(c, 1)
			n := copy(a, stream[:min(c, len(stream))])
			stream = stream[n:]
			if n == len(a) && len(stream) > 0 {
				m := copy(b, stream[:min(c-n, len(stream))])
				stream = stream[m:]
				n += m
			}
			return n, nil
		},
		alloc: func(l int) ([]byte, bool) {
			allocs++
			if !refused && len(chunks) > 0 && chunks[allocs%len(chunks)]%5 == 0 {
				refused = true
				return nil, false // no buffer now; the next attempt gets one
			}
			refused = false
			if discard {
				cur = nil
				return nil, true
			}
			cur = make([]byte, l, l+8)
			return cur, true
		},
		emit: func(l int) {
			if discard {
				frames = append(frames, nil)
				return
			}
			if len(cur) != l {
				t.Fatalf("emit %d bytes for a buffer of %d", l, len(cur))
			}
			frames = append(frames, cur)
		},
	}
	f := newFramer(limit)
	for i := 0; i < 10*len(data)+100; i++ {
		_, err = f.pump(fio, 1+i%3)
		if err != nil {
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
