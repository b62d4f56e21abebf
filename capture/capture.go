// Package capture records received bursts: one raw file per packet (RawWriter), classic pcap
// files (PcapWriter), and — in the subpackages — device-memory segments through cuFile
// (capture/gds) and S3 objects (capture/s3). It is engine-independent: it reads bursts only
// through engine.Burst's accessors.
//
// Every writer has a synchronous and an asynchronous form. An asynchronous write returns a
// Handle at once; the burst stays owned by the caller, who must not free it until the
// handle reports completion (Poll returns something other than ErrNotReady, or Wait or Close
// returned). Writes to one writer are applied in the order they were submitted.
//
// Fixes over upstream DAQIRI (upstream-daqiri.md §5, §11): raw files carry a burst sequence
// number so later bursts never overwrite earlier ones; pcap files default to nanosecond
// timestamps with snaplen 262144, record each packet's arrival time (its RX timestamp when
// the engine gives one) rather than the time of the write, and can rotate by size.
package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/daqiri-go/daqiri/engine"
)

// Status counts the outcome of one write (upstream FileWriteStatus / S3WriteStatus).
type Status struct {
	Completed int   `json:"completed"` // packets (or objects) written in full
	Failed    int   `json:"failed"`    // packets (or objects) not written
	Bytes     int64 `json:"bytes"`     // bytes written, file and record headers included
}

// Add accumulates o into s.
func (s *Status) Add(o Status) {
	s.Completed += o.Completed
	s.Failed += o.Failed
	s.Bytes += o.Bytes
}

// Handle is an asynchronous write in progress (upstream FileWriteHandle). Its methods are
// safe for concurrent use.
type Handle struct {
	done chan struct{}
	mu   sync.Mutex
	st   Status
	err  error
}

func newHandle() *Handle { return &Handle{done: make(chan struct{})} }

// progress publishes a partial status while the write runs.
func (h *Handle) progress(st Status) {
	h.mu.Lock()
	h.st = st
	h.mu.Unlock()
}

func (h *Handle) finish(st Status, err error) {
	h.mu.Lock()
	h.st, h.err = st, err
	h.mu.Unlock()
	close(h.done)
}

// Done is closed when the write has finished, successfully or not.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Poll reports the status without blocking. While the write runs the error is
// engine.ErrNotReady and the status counts what has been written so far; afterwards it is the
// write's final status and error (nil when every packet was written).
func (h *Handle) Poll() (Status, error) {
	select {
	case <-h.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.st, h.err
	default:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.st, engine.ErrNotReady
	}
}

// Wait blocks until the write finishes or ctx ends. When ctx ends first the write goes on
// (the caller still owns the burst and must not free it) and the error is ctx's.
func (h *Handle) Wait(ctx context.Context) (Status, error) {
	select {
	case <-h.done:
		return h.Poll()
	case <-ctx.Done():
		st, _ := h.Poll()
		return st, ctx.Err()
	}
}

// Close waits for the write to finish and returns its error (upstream
// daqiri_file_write_destroy). Afterwards the burst may be freed. Close is idempotent.
func (h *Handle) Close() error {
	<-h.done
	_, err := h.Poll()
	return err
}

// DeviceIO moves device-memory segments for the writers. Package capture/gds provides one
// backed by cuFile (GPUDirect Storage). Without one, a burst with a segment in device memory
// fails with engine.ErrNotSupported.
type DeviceIO interface {
	// CopyToHost copies len(dst) bytes from device address src (for pcap records and S3
	// staging, which need the bytes in host memory).
	CopyToHost(dst []byte, src uintptr) error
	// OpenFile prepares f for writes from device memory (cuFileHandleRegister).
	OpenFile(f *os.File) (DeviceFile, error)
}

// DeviceFile is a file opened for device-memory writes.
type DeviceFile interface {
	// WriteAt writes n bytes from device address src at byte off of the file.
	WriteAt(src uintptr, n int, off int64) error
	// Close releases what OpenFile set up; it does not close the *os.File.
	Close() error
}

// piece is a contiguous part of a packet's logical bytes within one segment.
type piece struct {
	seg    int
	start  int     // byte offset inside the segment
	n      int     // length
	host   []byte  // the bytes when the segment is CPU-addressable
	device uintptr // the device address when it is not
}

// pieces splits packet i of b into its segments' bytes, skipping the first skip bytes of the
// logical packet (which may span segments: skip = header length leaves only the payload of
// a header-data split packet). The slice is appended to dst.
func pieces(dst []piece, b *engine.Burst, i, skip int) ([]piece, int) {
	total := 0
	for s := 0; s < b.NumSegments(); s++ {
		l := b.SegmentLen(s, i)
		if skip >= l {
			skip -= l
			continue
		}
		p := piece{seg: s, start: skip, n: l - skip}
		skip = 0
		if r := b.SegmentRegion(s); r != nil && r.CPU() {
			p.host = b.Segment(s, i)[p.start:]
		} else {
			p.device = b.SegmentAddr(s, i) + uintptr(p.start)
		}
		total += p.n
		dst = append(dst, p)
	}
	return dst, total
}

// gather copies the pieces into buf (grown as needed) and returns the packet's bytes. A
// packet that is one host piece is returned without copying.
func gather(buf []byte, ps []piece, total int, dev DeviceIO) ([]byte, []byte, error) {
	if len(ps) == 1 && ps[0].host != nil {
		return ps[0].host, buf, nil
	}
	if cap(buf) < total {
		buf = make([]byte, total, max(total, 2*cap(buf)))
	}
	out := buf[:total]
	at := 0
	for _, p := range ps {
		if p.host != nil {
			copy(out[at:], p.host)
		} else {
			if dev == nil {
				return nil, buf, errNoDevice(p.seg)
			}
			if err := dev.CopyToHost(out[at:at+p.n], p.device); err != nil {
				return nil, buf, fmt.Errorf("copying segment %d from device memory: %w", p.seg, err)
			}
		}
		at += p.n
	}
	return out, buf, nil
}

func errNoDevice(seg int) error {
	return fmt.Errorf("segment %d is in device memory and no DeviceIO (capture/gds) was configured: %w", seg, engine.ErrNotSupported)
}

// failure wraps the first packet error of a write into the write's error.
func failure(st Status, first error) error {
	if st.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d packets not written: %w (%w)", st.Failed, st.Failed+st.Completed, first, engine.ErrGenericFailure)
}

// ErrClosed is returned by writes to a writer after its Close.
var ErrClosed = errors.New("capture: writer closed")

// sequencer runs writes one at a time in submission order, each in its own goroutine so an
// asynchronous caller never blocks; Close waits for all of them.
type sequencer struct {
	mu     sync.Mutex
	last   chan struct{} // done of the most recently submitted write
	wg     sync.WaitGroup
	closed bool
}

// submit starts fn after every earlier submission has finished and returns its handle.
func (q *sequencer) submit(fn func(h *Handle) (Status, error)) (*Handle, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, ErrClosed
	}
	h := newHandle()
	prev := q.last
	q.last = h.done
	q.wg.Add(1)
	q.mu.Unlock()
	go func() {
		defer q.wg.Done()
		if prev != nil {
			<-prev
		}
		st, err := fn(h)
		h.finish(st, err)
	}()
	return h, nil
}

// close refuses new submissions and waits for the ones in flight.
func (q *sequencer) close() bool {
	q.mu.Lock()
	was := q.closed
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
	return !was
}
