package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/daqiri-go/daqiri/engine"
)

// RawOptions configure a RawWriter.
type RawOptions struct {
	// Dir is the directory the files go to: an absolute path to an existing directory.
	Dir string
	// Prefix starts every file name; it must be non-empty and hold no path separator.
	Prefix string
	// Offset is upstream's packet_data_offset: the number of leading bytes of each logical
	// packet (its segments concatenated in order) that are not written. The skip may span
	// segments, so an offset equal to the header length of a header-data split queue writes
	// only the payload segment.
	Offset int
	// Device writes segments that live in device memory (capture/gds). Host segments are
	// always written with POSIX writes.
	Device DeviceIO
}

// RawWriter writes one file per packet (upstream daqiri_write_raw_to_file), named
// <Prefix>_<burst>_<packet>: burst is a sequence number that grows with every write and
// starts past the highest one already in Dir, packet is the index in the burst. Files are
// created exclusively, so a write never replaces an existing file. Methods are safe for
// concurrent use; writes are applied in submission order.
type RawWriter struct {
	o    RawOptions
	name *regexp.Regexp
	seq  sequencer
	next uint64 // next burst sequence number; guarded by seq ordering (one write at a time)
}

// NewRawWriter checks the options and finds the first free burst sequence number in Dir.
func NewRawWriter(o RawOptions) (*RawWriter, error) {
	if o.Prefix == "" || strings.ContainsAny(o.Prefix, `/\`) || o.Prefix == "." || o.Prefix == ".." {
		return nil, fmt.Errorf("raw capture: prefix %q must be non-empty and hold no / or \\: %w", o.Prefix, engine.ErrInvalidParameter)
	}
	if !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("raw capture: directory %q is not an absolute path: %w", o.Dir, engine.ErrInvalidParameter)
	}
	if o.Offset < 0 {
		return nil, fmt.Errorf("raw capture: negative packet data offset %d: %w", o.Offset, engine.ErrInvalidParameter)
	}
	st, err := os.Stat(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("raw capture: directory %s: %w (%w)", o.Dir, err, engine.ErrInvalidParameter)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("raw capture: %s is not a directory: %w", o.Dir, engine.ErrInvalidParameter)
	}
	w := &RawWriter{o: o, name: regexp.MustCompile(`^` + regexp.QuoteMeta(o.Prefix) + `_([0-9]+)_[0-9]+$`)}
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("raw capture: listing %s: %w", o.Dir, err)
	}
	for _, e := range entries {
		if m := w.name.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.ParseUint(m[1], 10, 64); err == nil && n+1 > w.next {
				w.next = n + 1
			}
		}
	}
	return w, nil
}

// NextBurst is the sequence number the next write will use.
func (w *RawWriter) NextBurst() uint64 {
	w.seq.mu.Lock()
	defer w.seq.mu.Unlock()
	return w.next
}

// FileName is the name a packet's file gets (without the directory).
func (w *RawWriter) FileName(burst uint64, packet int) string {
	return fmt.Sprintf("%s_%08d_%05d", w.o.Prefix, burst, packet)
}

// Write writes every packet of b to its own file and returns when done. The error is nil
// only when every packet was written; a packet that failed leaves no file behind.
func (w *RawWriter) Write(b *engine.Burst) (Status, error) {
	h, err := w.WriteAsync(b)
	if err != nil {
		return Status{}, err
	}
	<-h.Done()
	return h.Poll()
}

// WriteAsync starts writing b and returns at once. The caller keeps b and must not free it
// until the handle reports completion.
func (w *RawWriter) WriteAsync(b *engine.Burst) (*Handle, error) {
	if b == nil {
		return nil, fmt.Errorf("raw capture: nil burst: %w", engine.ErrNullPtr)
	}
	if n := b.NumSegments(); n < 1 || n > 4 {
		return nil, fmt.Errorf("raw capture: burst has %d segments, want 1 to 4: %w", n, engine.ErrInvalidParameter)
	}
	if err := w.checkDevice(b); err != nil {
		return nil, err
	}
	// The sequence number is taken at submission, so files are named in submission order
	// even though the writes run later.
	w.seq.mu.Lock()
	burst := w.next
	w.next++
	w.seq.mu.Unlock()
	return w.seq.submit(func(h *Handle) (Status, error) { return w.write(h, b, burst) })
}

// checkDevice refuses up front a burst with device segments when there is no DeviceIO.
func (w *RawWriter) checkDevice(b *engine.Burst) error {
	if w.o.Device != nil {
		return nil
	}
	for s := 0; s < b.NumSegments(); s++ {
		if r := b.SegmentRegion(s); r != nil && !r.CPU() {
			return fmt.Errorf("raw capture: %w", errNoDevice(s))
		}
	}
	return nil
}

func (w *RawWriter) write(h *Handle, b *engine.Burst, burst uint64) (Status, error) {
	var st Status
	var first error
	var ps []piece
	for i := 0; i < b.Len(); i++ {
		var total int
		ps, total = pieces(ps[:0], b, i, w.o.Offset)
		path := filepath.Join(w.o.Dir, w.FileName(burst, i))
		if err := w.writeFile(path, ps); err != nil {
			st.Failed++
			if first == nil {
				first = fmt.Errorf("packet %d: %w", i, err)
			}
		} else {
			st.Completed++
			st.Bytes += int64(total)
		}
		h.progress(st)
	}
	return st, failure(st, first)
}

// writeFile creates path exclusively and writes the pieces in order: host pieces with
// pwrite, device pieces through the DeviceIO. On any error the file is removed.
func (w *RawWriter) writeFile(path string, ps []piece) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists (another writer uses prefix %q in this directory?)", path, w.o.Prefix)
		}
		return err
	}
	var df DeviceFile
	defer func() {
		if df != nil {
			if cerr := df.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	var off int64
	for _, p := range ps {
		if p.host != nil {
			// os.File.WriteAt loops until everything is written or an error occurs.
			if _, err := f.WriteAt(p.host, off); err != nil {
				return err
			}
		} else {
			if w.o.Device == nil {
				return errNoDevice(p.seg)
			}
			if df == nil {
				if df, err = w.o.Device.OpenFile(f); err != nil {
					df = nil
					return fmt.Errorf("opening %s for device writes: %w", path, err)
				}
			}
			if err := df.WriteAt(p.device, p.n, off); err != nil {
				return fmt.Errorf("segment %d: %w", p.seg, err)
			}
		}
		off += int64(p.n)
	}
	return nil
}

// Close waits for writes in flight and refuses new ones.
func (w *RawWriter) Close() error {
	w.seq.close()
	return nil
}
