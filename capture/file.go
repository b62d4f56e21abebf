package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/daqiri-go/daqiri/engine"
)

// captureFile is what the pcap and pcapng writers share: the rotation names, the file being
// written with its buffer, the write sequencer, and the rule that a record counts as written
// only once a flush has put it in the file. The formats embed it and supply how a file is
// opened (open) and how a burst becomes records (write).
type captureFile struct {
	format      string // "pcap" or "pcapng": the prefix of every message
	stem, ext   string
	rotateBytes int64
	device      DeviceIO
	seq         sequencer

	// open opens (or creates) the file of index, checks an existing one and writes a new
	// one's header; it returns the header bytes it wrote.
	open func() (header int64, err error)
	// write turns one burst into records; called with mu held, in submission order.
	write func(h *Handle, b *engine.Burst, received time.Time) (Status, error)
	// kept and lost let a format keep its own per-file state in step with commits and
	// truncations (record counts, interface ids); either may be nil.
	kept func()
	lost func(records int)

	mu         sync.Mutex // guards everything below (held by the one write running)
	index      int        // rotation index of the current file (0 = the path itself)
	f          *os.File
	bw         *bufio.Writer
	size       int64 // bytes in the current file, including what bw holds
	files      []string
	scratch    []byte
	closedFile bool
	broken     error // a failed rotation left no file to write to
}

// setup checks the options the formats share, applies their defaults and finds the file
// to continue when rotating.
func (c *captureFile) setup(format, path string, snapLen *int, link *layers.LinkType, rotateBytes int64, dev DeviceIO) error {
	c.format, c.rotateBytes, c.device = format, rotateBytes, dev
	if path == "" {
		return fmt.Errorf("%s capture: empty path: %w", format, engine.ErrInvalidParameter)
	}
	if *snapLen == 0 {
		*snapLen = DefaultSnapLen
	}
	if *snapLen < 0 || *snapLen > maxRecordLen {
		return fmt.Errorf("%s capture: snaplen %d out of range 1..%d: %w", format, *snapLen, maxRecordLen, engine.ErrInvalidParameter)
	}
	if *link == 0 {
		*link = layers.LinkTypeEthernet
	}
	if rotateBytes < 0 {
		return fmt.Errorf("%s capture: negative rotation size %d: %w", format, rotateBytes, engine.ErrInvalidParameter)
	}
	c.ext = filepath.Ext(path)
	c.stem = strings.TrimSuffix(path, c.ext)
	if rotateBytes > 0 {
		idx, err := lastRotation(c.stem, c.ext)
		if err != nil {
			return err
		}
		c.index = idx
	}
	_, err := c.open()
	return err
}

// pathFor is the file name of a rotation index.
func (c *captureFile) pathFor(idx int) string {
	if idx == 0 {
		return c.stem + c.ext
	}
	return fmt.Sprintf("%s.%d%s", c.stem, idx, c.ext)
}

// Path is the file being written now.
func (c *captureFile) Path() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pathFor(c.index)
}

// Files lists every file this writer has written to, in order.
func (c *captureFile) Files() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.files...)
}

// openRegular opens path for reading and appending without following a symbolic link
// (O_NOFOLLOW: a link planted where a capture or one of its rotation files goes would
// otherwise have packets appended to, or a header written into, whatever it points at) and
// refuses anything but a regular file (O_NONBLOCK: a FIFO is refused, not waited on).
func (c *captureFile) openRegular(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("%s capture: %s is a symbolic link; capture files are not written through links (name the target instead): %w", c.format, path, engine.ErrInvalidParameter)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s capture: %w", c.format, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s capture: %w", c.format, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s capture: %s is not a regular file: %w", c.format, path, engine.ErrInvalidParameter)
	}
	return f, st.Size(), nil
}

// Write appends b's packets, stamping packets without an RX timestamp with the time of this
// call, and returns when they are in the file (flushed to the kernel, not fsynced).
func (c *captureFile) Write(b *engine.Burst) (Status, error) { return c.WriteAt(b, time.Now()) }

// WriteAt is Write with the time the burst was received, for packets without an RX
// timestamp.
func (c *captureFile) WriteAt(b *engine.Burst, received time.Time) (Status, error) {
	h, err := c.WriteAtAsync(b, received)
	if err != nil {
		return Status{}, err
	}
	<-h.Done()
	return h.Poll()
}

// WriteAsync starts appending b and returns at once; packets without an RX timestamp get the
// time of this call. The caller keeps b and must not free it until the handle reports
// completion.
func (c *captureFile) WriteAsync(b *engine.Burst) (*Handle, error) {
	return c.WriteAtAsync(b, time.Now())
}

// WriteAtAsync is WriteAsync with the time the burst was received.
func (c *captureFile) WriteAtAsync(b *engine.Burst, received time.Time) (*Handle, error) {
	if b == nil {
		return nil, fmt.Errorf("%s capture: nil burst: %w", c.format, engine.ErrNullPtr)
	}
	if n := b.NumSegments(); n < 1 || n > 4 {
		return nil, fmt.Errorf("%s capture: burst has %d segments, want 1 to 4: %w", c.format, n, engine.ErrInvalidParameter)
	}
	if c.device == nil {
		for s := 0; s < b.NumSegments(); s++ {
			if r := b.SegmentRegion(s); r != nil && !r.CPU() {
				return nil, fmt.Errorf("%s capture: %w", c.format, errNoDevice(s))
			}
		}
	}
	return c.seq.submit(func(h *Handle) (Status, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.broken != nil {
			// Every packet handed over is accounted for: none of these reach a file.
			st := Status{Failed: b.Len()}
			return st, failure(st, c.broken)
		}
		return c.write(h, b, received)
	})
}

// packet gathers packet i of b into one host buffer (valid until the next call).
func (c *captureFile) packet(b *engine.Burst, i int, ps []piece) ([]byte, []piece, error) {
	ps, total := pieces(ps[:0], b, i, 0)
	data, scratch, err := gather(c.scratch, ps, total, c.device)
	c.scratch = scratch
	return data, ps, err
}

// batch is one write's accounting. Records are counted as written only once a flush has put
// them in the file; committed marks the end of what is known to be there, and a failed
// flush truncates back to it so the file never ends in a partial record.
type batch struct {
	st        Status
	first     error
	total     int   // packets in the burst
	committed int64 // file size at the last commit
	n         int   // records written since the last commit
	bytes     int64 // their bytes (and those of any other block written with them)
}

func (c *captureFile) newBatch(total int) *batch { return &batch{total: total, committed: c.size} }

// note keeps the first error of the write.
func (bt *batch) note(err error) {
	if bt.first == nil {
		bt.first = err
	}
}

// skip counts packet i as failed without ending the write.
func (bt *batch) skip(i int, err error) {
	bt.st.Failed++
	bt.note(fmt.Errorf("packet %d: %w", i, err))
}

// progress is the status a handle shows while the write runs.
func (bt *batch) progress() Status {
	return Status{Completed: bt.st.Completed + bt.n, Failed: bt.st.Failed, Bytes: bt.st.Bytes + bt.bytes}
}

// result ends the write.
func (bt *batch) result() (Status, error) { return bt.st, failure(bt.st, bt.first) }

// commit counts what has been flushed as written.
func (c *captureFile) commit(bt *batch) {
	bt.st.Completed += bt.n
	bt.st.Bytes += bt.bytes
	bt.n, bt.bytes = 0, 0
	bt.committed = c.size
	if c.kept != nil {
		c.kept()
	}
}

// lose ends the write at packet i after a write or flush error: the file goes back to the
// last commit, and the uncommitted records and the packets not yet written count as failed.
// bufio's errors are sticky, so nothing more could go into this file buffer anyway.
func (c *captureFile) lose(bt *batch, i int, err error) (Status, error) {
	bt.note(err)
	c.bw.Reset(c.f)
	if terr := c.f.Truncate(bt.committed); terr == nil {
		c.f.Seek(bt.committed, io.SeekStart)
		c.size = bt.committed
	}
	if c.lost != nil {
		c.lost(bt.n)
	}
	bt.st.Failed += bt.n + (bt.total - i)
	return bt.result()
}

// flush puts the buffered records in the file and commits them; ok false means the write
// ended (lose) and its result is bt.result().
func (c *captureFile) flush(bt *batch, i int) bool {
	if err := c.bw.Flush(); err != nil {
		c.lose(bt, i, fmt.Errorf("flushing %s: %w", c.f.Name(), err))
		return false
	}
	c.commit(bt)
	return true
}

// full says whether n more bytes would take the current file past the rotation size; a
// file with no records (empty) is never full, so every file holds at least one.
func (c *captureFile) full(n int64, empty bool) bool {
	return c.rotateBytes > 0 && !empty && c.size+n > c.rotateBytes
}

// next flushes what is pending and moves to the next file before packet i. ok false means
// the write ended and its result is bt.result(); a failed rotation breaks the writer.
func (c *captureFile) next(bt *batch, i int) bool {
	if !c.flush(bt, i) {
		return false
	}
	if err := c.f.Close(); err != nil {
		c.broken = fmt.Errorf("%s capture: closing %s for rotation: %w", c.format, c.f.Name(), err)
	} else {
		c.index++
		header, err := c.open()
		if err == nil {
			bt.st.Bytes += header
			bt.committed = c.size
			if c.kept != nil {
				c.kept()
			}
			return true
		}
		c.broken = fmt.Errorf("%s capture: rotating to %s: %w", c.format, c.pathFor(c.index), err)
	}
	c.f = nil
	bt.st.Failed += bt.total - i
	bt.note(c.broken)
	return false
}

// Sync flushes the file to stable storage (fsync), after the writes submitted so far.
func (c *captureFile) Sync() error {
	h, err := c.seq.submit(func(*Handle) (Status, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.broken != nil {
			return Status{}, c.broken
		}
		return Status{}, c.f.Sync()
	})
	if err != nil {
		return err
	}
	return h.Close()
}

// Close waits for writes in flight, flushes and closes the file. Idempotent.
func (c *captureFile) Close() error {
	if !c.seq.close() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closedFile || c.f == nil {
		return nil
	}
	c.closedFile = true
	err := c.bw.Flush()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s capture: closing %s: %w", c.format, c.f.Name(), err)
	}
	return nil
}
