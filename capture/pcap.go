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
	captureFile
	o       PcapOptions
	pw      *pcapgo.Writer
	snap    int
	records int64 // records in the current file
}

// OpenPcap opens path for appending, creating it when it does not exist or is empty. An
// existing file must be a classic little-endian pcap with version 2.4, the requested
// timestamp resolution and link type, and whole records up to its end; otherwise OpenPcap
// fails with an error naming the mismatch (wrapping engine.ErrInvalidParameter) and leaves
// the file untouched. With rotation the highest-numbered existing file is continued.
func OpenPcap(path string, o PcapOptions) (*PcapWriter, error) {
	w := &PcapWriter{o: o}
	w.open, w.write = w.openFile, w.writeBurst
	w.lost = func(n int) { w.records -= int64(n) }
	if err := w.setup("pcap", path, &w.o.SnapLen, &w.o.LinkType, o.RotateBytes, o.Device); err != nil {
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

// SnapLen is the snapshot length of the current file.
func (w *PcapWriter) SnapLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snap
}

// openFile opens (or creates) the file of the current index, checking an existing one.
func (w *PcapWriter) openFile() (int64, error) {
	path := w.pathFor(w.index)
	f, size, err := w.openRegular(path)
	if err != nil {
		return 0, err
	}
	w.f, w.size, w.records = f, size, 0
	w.bw = bufio.NewWriterSize(f, 256<<10)
	if w.o.Microseconds {
		w.pw = pcapgo.NewWriter(w.bw)
	} else {
		w.pw = pcapgo.NewWriterNanos(w.bw)
	}
	var header int64
	if size == 0 {
		w.snap = w.o.SnapLen
		if err := w.pw.WriteFileHeader(uint32(w.snap), w.o.LinkType); err != nil {
			f.Close()
			return 0, fmt.Errorf("pcap capture: %w", err)
		}
		if err := w.bw.Flush(); err != nil {
			f.Close()
			os.Remove(path)
			return 0, fmt.Errorf("pcap capture: writing the header of %s: %w", path, err)
		}
		w.size, header = FileHeaderLen, FileHeaderLen
	} else {
		snap, records, err := checkPcap(f, size, w.o)
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("pcap capture: cannot append to %s: %w (%w)", path, err, engine.ErrInvalidParameter)
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return 0, fmt.Errorf("pcap capture: %w", err)
		}
		w.snap, w.records = snap, records
	}
	w.files = append(w.files, path)
	return header, nil
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

// writeBurst appends b's packets as records.
func (w *PcapWriter) writeBurst(h *Handle, b *engine.Burst, received time.Time) (Status, error) {
	bt := w.newBatch(b.Len())
	var ps []piece
	for i := 0; i < b.Len(); i++ {
		data, more, err := w.packet(b, i, ps)
		ps = more
		if err != nil {
			bt.skip(i, err)
			continue
		}
		capLen := min(len(data), w.snap)
		rec := int64(RecordHeaderLen + capLen)
		if w.full(rec, w.records == 0) && !w.next(bt, i) {
			return bt.result()
		}
		ts := received
		if ns, err := b.RxTimestamp(i); err == nil {
			ts = time.Unix(0, ns)
		}
		ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: capLen, Length: len(data)}
		if err := w.pw.WritePacket(ci, data[:capLen]); err != nil {
			return w.lose(bt, i, fmt.Errorf("packet %d: %w", i, err))
		}
		w.size += rec
		w.records++
		bt.n++
		bt.bytes += rec
		h.progress(bt.progress())
	}
	w.flush(bt, b.Len())
	return bt.result()
}
