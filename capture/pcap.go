package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/daqiri-go/daqiri/engine"
)

// Classic pcap constants (libpcap's pcap-savefile format, also described by the IETF draft
// "PCAP Capture File Format", draft-ietf-opsawg-pcap): a 24-byte file header whose magic
// number tells the timestamp resolution and the writer's byte order, then per packet a
// 16-byte record header (seconds, sub-seconds, captured length, original length) and the
// captured bytes.
const (
	// MagicMicroseconds is the magic of a file whose record timestamps are in microseconds.
	MagicMicroseconds = 0xa1b2c3d4
	// MagicNanoseconds is the magic of a file whose record timestamps are in nanoseconds.
	MagicNanoseconds = 0xa1b23c4d
	// DefaultSnapLen is the snapshot length daqiri writes unless told otherwise: the
	// largest one libpcap and Wireshark accept without complaint for Ethernet.
	DefaultSnapLen = 262144
	// FileHeaderLen is the size of the pcap file header.
	FileHeaderLen = 24
	// RecordHeaderLen is the size of a pcap record header.
	RecordHeaderLen = 16

	magicPcapng = 0x0a0d0d0a // section header block type: the first 4 bytes of a pcapng file
	// maxRecordLen bounds a record's captured length when checking a file before appending;
	// anything larger means the file is not what its header says.
	maxRecordLen = 256 << 20
)

// PcapOptions configure a PcapWriter. The zero value writes nanosecond Ethernet pcap with
// snaplen 262144 and no rotation.
type PcapOptions struct {
	// Microseconds writes microsecond timestamps (magic a1b2c3d4) instead of nanosecond ones
	// (a1b23c4d).
	Microseconds bool
	// SnapLen is the snapshot length in the file header (0 = DefaultSnapLen). Packets
	// longer than it are truncated to it in the file; the record keeps their real length.
	// When appending, the existing file's snapshot length is used instead.
	SnapLen int
	// LinkType is the file's link-layer header type (0 = Ethernet, 1). Socket streams carry
	// no link-layer header: use layers.LinkTypeRaw when their payloads are IP packets, or a
	// user type (147, LINKTYPE_USER0) for application data.
	LinkType layers.LinkType
	// RotateBytes, when positive, starts a new file before a record would make the current
	// one larger than this many bytes (a file always holds at least one record). Files are
	// named <stem>.pcap, <stem>.1.pcap, <stem>.2.pcap ... (for a path <stem>.pcap).
	RotateBytes int64
	// Device copies device-memory segments to host memory (capture/gds). Without it a burst
	// with device segments fails with engine.ErrNotSupported.
	Device DeviceIO
}

// PcapWriter appends bursts to a classic pcap file (upstream daqiri_write_pcap_to_file).
// Each packet is one record: its segments concatenated, truncated at the snapshot length,
// stamped with its arrival time — the engine's RX timestamp when it has one, else the
// receive time the caller passes (or the time of the write call). Methods are safe for
// concurrent use; writes are applied in submission order.
type PcapWriter struct {
	o          PcapOptions
	stem, ext  string
	seq        sequencer
	mu         sync.Mutex // guards everything below (held by the one write running)
	index      int        // rotation index of the current file (0 = the path itself)
	f          *os.File
	bw         *bufio.Writer
	pw         *pcapgo.Writer
	snap       int
	size       int64 // bytes in the current file, including what bw holds
	records    int64 // records in the current file
	files      []string
	scratch    []byte
	closedFile bool
	broken     error // a failed rotation left no file to write to
}

// OpenPcap opens path for appending, creating it when it does not exist or is empty. An
// existing file must be a classic little-endian pcap with version 2.4, the requested
// timestamp resolution and link type, and whole records up to its end; otherwise OpenPcap
// fails with an error naming the mismatch (wrapping engine.ErrInvalidParameter) and leaves
// the file untouched. With rotation the highest-numbered existing file is continued.
func OpenPcap(path string, o PcapOptions) (*PcapWriter, error) {
	if path == "" {
		return nil, fmt.Errorf("pcap capture: empty path: %w", engine.ErrInvalidParameter)
	}
	if o.SnapLen == 0 {
		o.SnapLen = DefaultSnapLen
	}
	if o.SnapLen < 0 || o.SnapLen > maxRecordLen {
		return nil, fmt.Errorf("pcap capture: snaplen %d out of range 1..%d: %w", o.SnapLen, maxRecordLen, engine.ErrInvalidParameter)
	}
	if o.LinkType == 0 {
		o.LinkType = layers.LinkTypeEthernet
	}
	if o.RotateBytes < 0 {
		return nil, fmt.Errorf("pcap capture: negative rotation size %d: %w", o.RotateBytes, engine.ErrInvalidParameter)
	}
	w := &PcapWriter{o: o}
	w.ext = filepath.Ext(path)
	w.stem = strings.TrimSuffix(path, w.ext)
	if o.RotateBytes > 0 {
		idx, err := lastRotation(w.stem, w.ext)
		if err != nil {
			return nil, err
		}
		w.index = idx
	}
	if err := w.openFile(); err != nil {
		return nil, err
	}
	return w, nil
}

// lastRotation finds the highest existing rotation index for stem/ext (0 when none).
func lastRotation(stem, ext string) (int, error) {
	dir, base := filepath.Split(stem)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("pcap capture: directory %s: %w (%w)", dir, err, engine.ErrInvalidParameter)
		}
		return 0, fmt.Errorf("pcap capture: listing %s: %w", dir, err)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `\.([0-9]+)` + regexp.QuoteMeta(ext) + `$`)
	best := 0
	for _, e := range entries {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > best {
				best = n
			}
		}
	}
	return best, nil
}

// pathFor is the file name of a rotation index.
func (w *PcapWriter) pathFor(idx int) string {
	if idx == 0 {
		return w.stem + w.ext
	}
	return fmt.Sprintf("%s.%d%s", w.stem, idx, w.ext)
}

// Path is the file being written now.
func (w *PcapWriter) Path() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pathFor(w.index)
}

// Files lists every file this writer has written to, in order.
func (w *PcapWriter) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.files...)
}

// SnapLen is the snapshot length of the current file.
func (w *PcapWriter) SnapLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snap
}

// openFile opens (or creates) the file of the current index, checking an existing one.
func (w *PcapWriter) openFile() error {
	path := w.pathFor(w.index)
	// Never through a symbolic link (O_NOFOLLOW): a link planted where a capture or one of
	// its rotation files goes would otherwise have packets appended to, or a header written
	// into, whatever file it points at. O_NONBLOCK: a FIFO is refused below, not waited on.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("pcap capture: %s is a symbolic link; capture files are not written through links (name the target instead): %w", path, engine.ErrInvalidParameter)
	}
	if err != nil {
		return fmt.Errorf("pcap capture: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("pcap capture: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("pcap capture: %s is not a regular file: %w", path, engine.ErrInvalidParameter)
	}
	w.f, w.size, w.records = f, st.Size(), 0
	w.bw = bufio.NewWriterSize(f, 256<<10)
	if w.o.Microseconds {
		w.pw = pcapgo.NewWriter(w.bw)
	} else {
		w.pw = pcapgo.NewWriterNanos(w.bw)
	}
	if st.Size() == 0 {
		w.snap = w.o.SnapLen
		if err := w.pw.WriteFileHeader(uint32(w.snap), w.o.LinkType); err != nil {
			f.Close()
			return fmt.Errorf("pcap capture: %w", err)
		}
		if err := w.bw.Flush(); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("pcap capture: writing the header of %s: %w", path, err)
		}
		w.size = FileHeaderLen
	} else {
		snap, records, err := checkPcap(f, st.Size(), w.o)
		if err != nil {
			f.Close()
			return fmt.Errorf("pcap capture: cannot append to %s: %w (%w)", path, err, engine.ErrInvalidParameter)
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return fmt.Errorf("pcap capture: %w", err)
		}
		w.snap, w.records = snap, records
	}
	w.files = append(w.files, path)
	return nil
}

// checkPcap reads an existing file's header and walks its records to make sure appending
// keeps it valid. It returns the file's snapshot length and record count.
func checkPcap(f *os.File, size int64, o PcapOptions) (snap int, records int64, err error) {
	if size < FileHeaderLen {
		return 0, 0, fmt.Errorf("%d bytes is too short for a pcap file header (%d bytes)", size, FileHeaderLen)
	}
	var h [FileHeaderLen]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, 0, err
	}
	magic := binary.LittleEndian.Uint32(h[0:4])
	switch magic {
	case MagicMicroseconds, MagicNanoseconds:
	case 0xd4c3b2a1, 0x4d3cb2a1:
		return 0, 0, errors.New("it is a big-endian pcap file; daqiri writes little-endian records and will not mix byte orders")
	case magicPcapng:
		return 0, 0, errors.New("it is a pcapng file; daqiri appends only to classic pcap")
	default:
		return 0, 0, fmt.Errorf("it is not a pcap file (first 4 bytes %#08x; want %#08x or %#08x)", magic, MagicNanoseconds, MagicMicroseconds)
	}
	if major, minor := binary.LittleEndian.Uint16(h[4:6]), binary.LittleEndian.Uint16(h[6:8]); major != 2 || minor != 4 {
		return 0, 0, fmt.Errorf("its format version is %d.%d, want 2.4", major, minor)
	}
	if o.Microseconds && magic != MagicMicroseconds {
		return 0, 0, errors.New("its timestamps are in nanoseconds and microseconds were asked for")
	}
	if !o.Microseconds && magic != MagicNanoseconds {
		return 0, 0, errors.New("its timestamps are in microseconds; append with PcapOptions.Microseconds (daqiri-capture --micro) or write a new file")
	}
	if lt := binary.LittleEndian.Uint32(h[20:24]); lt != uint32(o.LinkType) {
		return 0, 0, fmt.Errorf("its link type is %d, want %d (%s)", lt, uint32(o.LinkType), o.LinkType)
	}
	snap = int(binary.LittleEndian.Uint32(h[16:20]))
	if snap <= 0 || snap > maxRecordLen {
		return 0, 0, fmt.Errorf("its snapshot length %d is out of range", snap)
	}
	// Walk the records: a file that ends inside one (a writer that was killed) would turn
	// everything appended after it into garbage.
	r := bufio.NewReaderSize(io.NewSectionReader(f, FileHeaderLen, size-FileHeaderLen), 64<<10)
	at := int64(FileHeaderLen)
	var rh [RecordHeaderLen]byte
	for at < size {
		if size-at < RecordHeaderLen {
			return 0, 0, fmt.Errorf("it ends inside a record header at byte %d (an interrupted writer?); truncate it to %d bytes or start a new file", at, at)
		}
		if _, err := io.ReadFull(r, rh[:]); err != nil {
			return 0, 0, err
		}
		incl := int64(binary.LittleEndian.Uint32(rh[8:12]))
		if incl > maxRecordLen {
			return 0, 0, fmt.Errorf("the record at byte %d claims %d captured bytes; the file is corrupt", at, incl)
		}
		if at+RecordHeaderLen+incl > size {
			return 0, 0, fmt.Errorf("it ends inside the record at byte %d (an interrupted writer?); truncate it to %d bytes or start a new file", at, at)
		}
		if _, err := r.Discard(int(incl)); err != nil {
			return 0, 0, err
		}
		at += RecordHeaderLen + incl
		records++
	}
	return snap, records, nil
}

// Write appends b's packets, using the time of this call for packets without an RX
// timestamp, and returns when they are in the file (flushed to the kernel, not fsynced).
func (w *PcapWriter) Write(b *engine.Burst) (Status, error) {
	return w.WriteAt(b, time.Now())
}

// WriteAt is Write with the time the burst was received, for packets without an RX
// timestamp.
func (w *PcapWriter) WriteAt(b *engine.Burst, received time.Time) (Status, error) {
	h, err := w.WriteAtAsync(b, received)
	if err != nil {
		return Status{}, err
	}
	<-h.Done()
	return h.Poll()
}

// WriteAsync starts appending b and returns at once; packets without an RX timestamp get the
// time of this call. The caller keeps b and must not free it until the handle reports
// completion.
func (w *PcapWriter) WriteAsync(b *engine.Burst) (*Handle, error) {
	return w.WriteAtAsync(b, time.Now())
}

// WriteAtAsync is WriteAsync with the time the burst was received.
func (w *PcapWriter) WriteAtAsync(b *engine.Burst, received time.Time) (*Handle, error) {
	if b == nil {
		return nil, fmt.Errorf("pcap capture: nil burst: %w", engine.ErrNullPtr)
	}
	if n := b.NumSegments(); n < 1 || n > 4 {
		return nil, fmt.Errorf("pcap capture: burst has %d segments, want 1 to 4: %w", n, engine.ErrInvalidParameter)
	}
	if w.o.Device == nil {
		for s := 0; s < b.NumSegments(); s++ {
			if r := b.SegmentRegion(s); r != nil && !r.CPU() {
				return nil, fmt.Errorf("pcap capture: %w", errNoDevice(s))
			}
		}
	}
	return w.seq.submit(func(h *Handle) (Status, error) { return w.write(h, b, received) })
}

func (w *PcapWriter) write(h *Handle, b *engine.Burst, received time.Time) (Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st Status
	if w.broken != nil {
		return st, w.broken
	}
	// Records are counted as written only once a flush has put them in the file; committed
	// marks the end of what is known to be there, and a failed flush truncates back to it so
	// the file never ends in a partial record.
	committed := w.size
	pendingN, pendingBytes := 0, int64(0)
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	commit := func() {
		st.Completed += pendingN
		st.Bytes += pendingBytes
		pendingN, pendingBytes = 0, 0
	}
	lose := func(i int, err error) (Status, error) {
		note(err)
		w.truncate(committed)
		w.records -= int64(pendingN)
		st.Failed += pendingN + (b.Len() - i)
		return st, failure(st, first)
	}
	var ps []piece
	for i := 0; i < b.Len(); i++ {
		var total int
		ps, total = pieces(ps[:0], b, i, 0)
		data, scratch, err := gather(w.scratch, ps, total, w.o.Device)
		w.scratch = scratch
		if err != nil {
			st.Failed++
			note(fmt.Errorf("packet %d: %w", i, err))
			continue
		}
		capLen := min(len(data), w.snap)
		rec := int64(RecordHeaderLen + capLen)
		if w.o.RotateBytes > 0 && w.records > 0 && w.size+rec > w.o.RotateBytes {
			if err := w.bw.Flush(); err != nil {
				return lose(i, fmt.Errorf("flushing %s: %w", w.f.Name(), err))
			}
			commit()
			if err := w.rotate(); err != nil {
				st.Failed += b.Len() - i
				note(err)
				return st, failure(st, first)
			}
			st.Bytes += FileHeaderLen
			committed = w.size
		}
		ts := received
		if ns, err := b.RxTimestamp(i); err == nil {
			ts = time.Unix(0, ns)
		}
		ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: capLen, Length: len(data)}
		if err := w.pw.WritePacket(ci, data[:capLen]); err != nil {
			// bufio's errors are sticky: nothing more can go into this file now.
			return lose(i, fmt.Errorf("packet %d: %w", i, err))
		}
		w.size += rec
		w.records++
		pendingN++
		pendingBytes += rec
		h.progress(Status{Completed: st.Completed + pendingN, Failed: st.Failed, Bytes: st.Bytes + pendingBytes})
	}
	if err := w.bw.Flush(); err != nil {
		return lose(b.Len(), fmt.Errorf("flushing %s: %w", w.f.Name(), err))
	}
	commit()
	return st, failure(st, first)
}

// truncate drops everything after byte n of the current file and resets the buffer, after a
// failed write, so the file stays a sequence of whole records.
func (w *PcapWriter) truncate(n int64) {
	w.bw.Reset(w.f)
	if err := w.f.Truncate(n); err == nil {
		w.f.Seek(n, io.SeekStart)
		w.size = n
	}
}

// rotate closes the current (flushed) file and starts the next one. When that fails the
// writer is broken: later writes return the error.
func (w *PcapWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		w.broken = fmt.Errorf("pcap capture: closing %s for rotation: %w", w.f.Name(), err)
		w.f = nil
		return w.broken
	}
	w.index++
	if err := w.openFile(); err != nil {
		w.broken = fmt.Errorf("pcap capture: rotating to %s: %w", w.pathFor(w.index), err)
		w.f = nil
		return w.broken
	}
	return nil
}

// Sync flushes the file to stable storage (fsync), after the writes submitted so far.
func (w *PcapWriter) Sync() error {
	h, err := w.seq.submit(func(*Handle) (Status, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.broken != nil {
			return Status{}, w.broken
		}
		return Status{}, w.f.Sync()
	})
	if err != nil {
		return err
	}
	return h.Close()
}

// Close waits for writes in flight, flushes and closes the file. Idempotent.
func (w *PcapWriter) Close() error {
	if !w.seq.close() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closedFile || w.f == nil {
		return nil
	}
	w.closedFile = true
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pcap capture: closing %s: %w", w.f.Name(), err)
	}
	return nil
}
