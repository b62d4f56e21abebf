package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/daqiri-go/daqiri/engine"
)

// pcapng block and option codes, from the IETF draft "PCAP Next Generation (pcapng) Capture
// File Format" (draft-ietf-opsawg-pcapng): every block is type, total length, body, total
// length again, all 32-bit aligned; options are code, length, value padded to 32 bits, ended
// by opt_endofopt.
const (
	blockSHB = 0x0A0D0D0A // section header
	blockIDB = 0x00000001 // interface description
	blockEPB = 0x00000006 // enhanced packet

	byteOrderMagic = 0x1A2B3C4D

	optEndOfOpt  = 0
	optComment   = 1
	optShbUserAp = 4 // shb_userappl
	optIfName    = 2 // if_name
	optIfDescr   = 3 // if_description
	optIfTsresol = 9 // if_tsresol: 9 = 10^-9 s
	optEpbQueue  = 6 // epb_queue: the queue the packet was received on

	// maxBlockLen bounds a block when checking an existing file before appending.
	maxBlockLen = maxRecordLen + 4096
)

// PcapngOptions configure a PcapngWriter. The zero value writes Ethernet with snaplen 262144
// and no rotation.
type PcapngOptions struct {
	// SnapLen is every interface block's snapshot length (0 = DefaultSnapLen); longer
	// packets are truncated to it in the file, keeping their real length.
	SnapLen int
	// LinkType of the interfaces (0 = Ethernet). Socket streams: layers.LinkTypeRaw or 147.
	LinkType layers.LinkType
	// RotateBytes, when positive, starts a new file before a block would make the current
	// one larger (a file always holds at least one packet). Files are named <stem>.pcapng,
	// <stem>.1.pcapng, ... as with pcap.
	RotateBytes int64
	// PortNames names ports in interface blocks ("rx_port/rx/q0"); a port it does not list
	// is "port<N>".
	PortNames map[int]string
	// Device copies device-memory segments to host memory (capture/gds).
	Device DeviceIO
}

// PcapngWriter writes bursts to pcapng files: one section per file (appending continues an
// existing file's last section), one interface description block per (port, direction, queue) the bursts
// come from, written before that interface's first packet, and one enhanced packet block per
// packet with a nanosecond timestamp (if_tsresol 9), the queue in epb_queue and a comment
// "flow_id=N queue=Q" that tshark shows as frame.comment. Timestamps are the engine's RX
// timestamp when it has one, else the receive time given to the write. Methods are safe for
// concurrent use; writes are applied in submission order.
type PcapngWriter struct {
	o          PcapngOptions
	stem, ext  string
	seq        sequencer
	mu         sync.Mutex // guards everything below
	index      int
	f          *os.File
	bw         *bufio.Writer
	size       int64
	packets    int64 // packet blocks in the current section
	ifaces     map[ifaceKey]uint32
	nextIface  uint32 // id of the next interface block in the current section
	files      []string
	scratch    []byte
	blk        []byte
	closedFile bool
	broken     error
}

type ifaceKey struct {
	port, queue int
	tx          bool
}

// OpenPcapng opens path for appending, creating it when missing or empty. An existing file
// must be little-endian pcapng made of whole blocks; appending continues its last section.
// Otherwise OpenPcapng fails naming the problem (wrapping engine.ErrInvalidParameter) and
// leaves the file untouched. Symbolic links are not followed.
func OpenPcapng(path string, o PcapngOptions) (*PcapngWriter, error) {
	if path == "" {
		return nil, fmt.Errorf("pcapng capture: empty path: %w", engine.ErrInvalidParameter)
	}
	if o.SnapLen == 0 {
		o.SnapLen = DefaultSnapLen
	}
	if o.SnapLen < 0 || o.SnapLen > maxRecordLen {
		return nil, fmt.Errorf("pcapng capture: snaplen %d out of range 1..%d: %w", o.SnapLen, maxRecordLen, engine.ErrInvalidParameter)
	}
	if o.LinkType == 0 {
		o.LinkType = layers.LinkTypeEthernet
	}
	if o.RotateBytes < 0 {
		return nil, fmt.Errorf("pcapng capture: negative rotation size %d: %w", o.RotateBytes, engine.ErrInvalidParameter)
	}
	w := &PcapngWriter{o: o}
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

func (w *PcapngWriter) pathFor(idx int) string {
	if idx == 0 {
		return w.stem + w.ext
	}
	return fmt.Sprintf("%s.%d%s", w.stem, idx, w.ext)
}

// Path is the file being written now.
func (w *PcapngWriter) Path() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pathFor(w.index)
}

// Files lists every file this writer has written to, in order.
func (w *PcapngWriter) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.files...)
}

// openFile opens the file of the current index, checks an existing one and starts a section.
func (w *PcapngWriter) openFile() error {
	path := w.pathFor(w.index)
	// As pcap: never through a symbolic link, and a FIFO is refused, not waited on.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("pcapng capture: %s is a symbolic link; capture files are not written through links (name the target instead): %w", path, engine.ErrInvalidParameter)
	}
	if err != nil {
		return fmt.Errorf("pcapng capture: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("pcapng capture: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("pcapng capture: %s is not a regular file: %w", path, engine.ErrInvalidParameter)
	}
	var idbs uint32
	if st.Size() > 0 {
		if idbs, err = checkPcapng(f, st.Size()); err != nil {
			f.Close()
			return fmt.Errorf("pcapng capture: cannot append to %s: %w (%w)", path, err, engine.ErrInvalidParameter)
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return fmt.Errorf("pcapng capture: %w", err)
		}
	}
	w.f, w.size, w.packets = f, st.Size(), 0
	w.ifaces, w.nextIface = map[ifaceKey]uint32{}, idbs
	w.bw = bufio.NewWriterSize(f, 256<<10)
	w.files = append(w.files, path)
	if st.Size() > 0 {
		// Continue the last section: a new section would be valid pcapng too, but tshark
		// 4.0 resolves interface ids of later sections against the first one's.
		return nil
	}
	shb := w.block(blockSHB, func(b []byte) []byte {
		b = binary.LittleEndian.AppendUint32(b, byteOrderMagic)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint16(b, 0)
		b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length not given
		b = appendOpt(b, optShbUserAp, []byte("daqiri-go capture"))
		return appendOpt(b, optEndOfOpt, nil)
	})
	if _, err := w.bw.Write(shb); err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		f.Truncate(0)
		f.Close()
		w.files = w.files[:len(w.files)-1]
		return fmt.Errorf("pcapng capture: writing the section header of %s: %w", path, err)
	}
	w.size += int64(len(shb))
	return nil
}

// checkPcapng walks an existing file's blocks so that appending keeps it valid: every block
// whole, its trailing length equal to its leading one, every section little-endian. It
// returns the number of interface blocks in the last section: appended packets continue
// that section, their interface blocks numbered after its own.
func checkPcapng(f *os.File, size int64) (idbs uint32, err error) {
	var h [12]byte
	for at := int64(0); at < size; {
		if size-at < 12 {
			return 0, fmt.Errorf("it ends inside a block header at byte %d (an interrupted writer?); truncate it to %d bytes or start a new file", at, at)
		}
		if _, err := f.ReadAt(h[:], at); err != nil {
			return 0, err
		}
		typ, n := binary.LittleEndian.Uint32(h[0:]), int64(binary.LittleEndian.Uint32(h[4:]))
		switch {
		case at == 0 && (typ == MagicNanoseconds || typ == MagicMicroseconds):
			return 0, errors.New("it is a classic pcap file; write pcapng to a new file")
		case at == 0 && typ != blockSHB:
			return 0, fmt.Errorf("it is not a pcapng file (first 4 bytes %#08x; want %#08x)", typ, blockSHB)
		case typ == blockSHB && binary.LittleEndian.Uint32(h[8:]) != byteOrderMagic:
			return 0, fmt.Errorf("the section at byte %d is big-endian; daqiri writes little-endian and will not mix byte orders", at)
		}
		if n < 12 || n%4 != 0 || n > maxBlockLen {
			return 0, fmt.Errorf("the block at byte %d has length %d; the file is corrupt", at, n)
		}
		if at+n > size {
			return 0, fmt.Errorf("it ends inside the block at byte %d (an interrupted writer?); truncate it to %d bytes or start a new file", at, at)
		}
		if _, err := f.ReadAt(h[:4], at+n-4); err != nil {
			return 0, err
		}
		if t := int64(binary.LittleEndian.Uint32(h[:4])); t != n {
			return 0, fmt.Errorf("the block at byte %d ends with length %d, not %d; the file is corrupt", at, t, n)
		}
		switch typ {
		case blockSHB:
			idbs = 0
		case blockIDB:
			idbs++
		}
		at += n
	}
	return idbs, nil
}

// block frames a block body built by body into w.blk (reused) and returns it.
func (w *PcapngWriter) block(typ uint32, body func([]byte) []byte) []byte {
	b := w.blk[:0]
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = body(b)
	n := uint32(len(b) + 4)
	binary.LittleEndian.PutUint32(b[4:], n)
	b = binary.LittleEndian.AppendUint32(b, n)
	w.blk = b
	return b
}

func pad4(n int) int { return (n + 3) &^ 3 }

// appendOpt appends one option, its value padded to 32 bits.
func appendOpt(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	for i := len(v); i < pad4(len(v)); i++ {
		b = append(b, 0)
	}
	return b
}

// ifaceName is the if_name of (port, direction, queue).
func (w *PcapngWriter) ifaceName(k ifaceKey) string {
	port, ok := w.o.PortNames[k.port]
	if !ok {
		port = "port" + strconv.Itoa(k.port)
	}
	dir := "rx"
	if k.tx {
		dir = "tx"
	}
	return port + "/" + dir + "/q" + strconv.Itoa(k.queue)
}

// Write appends b's packets, stamping packets without an RX timestamp with the time of this
// call, and returns when they are in the file (flushed to the kernel, not fsynced).
func (w *PcapngWriter) Write(b *engine.Burst) (Status, error) { return w.WriteAt(b, time.Now()) }

// WriteAt is Write with the time the burst was received.
func (w *PcapngWriter) WriteAt(b *engine.Burst, received time.Time) (Status, error) {
	h, err := w.WriteAtAsync(b, received)
	if err != nil {
		return Status{}, err
	}
	<-h.Done()
	return h.Poll()
}

// WriteAsync starts appending b and returns at once. The caller keeps b and must not free it
// until the handle reports completion.
func (w *PcapngWriter) WriteAsync(b *engine.Burst) (*Handle, error) {
	return w.WriteAtAsync(b, time.Now())
}

// WriteAtAsync is WriteAsync with the time the burst was received.
func (w *PcapngWriter) WriteAtAsync(b *engine.Burst, received time.Time) (*Handle, error) {
	if b == nil {
		return nil, fmt.Errorf("pcapng capture: nil burst: %w", engine.ErrNullPtr)
	}
	if n := b.NumSegments(); n < 1 || n > 4 {
		return nil, fmt.Errorf("pcapng capture: burst has %d segments, want 1 to 4: %w", n, engine.ErrInvalidParameter)
	}
	if w.o.Device == nil {
		for s := 0; s < b.NumSegments(); s++ {
			if r := b.SegmentRegion(s); r != nil && !r.CPU() {
				return nil, fmt.Errorf("pcapng capture: %w", errNoDevice(s))
			}
		}
	}
	return w.seq.submit(func(h *Handle) (Status, error) { return w.write(h, b, received) })
}

func (w *PcapngWriter) write(h *Handle, b *engine.Burst, received time.Time) (Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st Status
	if w.broken != nil {
		return st, w.broken
	}
	// As in pcap: a failed flush truncates back to the last committed byte, and the
	// interface blocks written since are forgotten with it.
	committed := w.size
	known := w.nextIface
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
		known = w.nextIface
	}
	lose := func(i int, err error) (Status, error) {
		note(err)
		w.bw.Reset(w.f)
		if terr := w.f.Truncate(committed); terr == nil {
			w.f.Seek(committed, io.SeekStart)
			w.size = committed
		}
		for k, id := range w.ifaces {
			if id >= known {
				delete(w.ifaces, k)
			}
		}
		w.nextIface = known
		w.packets -= int64(pendingN)
		st.Failed += pendingN + (b.Len() - i)
		return st, failure(st, first)
	}
	key := ifaceKey{port: b.Port(), queue: b.Queue(), tx: b.IsTx()}
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
		capLen := min(len(data), w.o.SnapLen)
		comment := "flow_id=" + strconv.FormatUint(uint64(b.FlowID(i)), 10) + " queue=" + strconv.Itoa(key.queue)
		epbLen := int64(32 + pad4(capLen) + 4 + pad4(len(comment)) + 8 + 4)
		_, have := w.ifaces[key]
		var idbLen int64
		if !have {
			idbLen = int64(20 + 4 + pad4(len(w.ifaceName(key))) + 8 + 4)
		}
		if w.o.RotateBytes > 0 && w.packets > 0 && w.size+idbLen+epbLen > w.o.RotateBytes {
			if err := w.bw.Flush(); err != nil {
				return lose(i, fmt.Errorf("flushing %s: %w", w.f.Name(), err))
			}
			commit()
			if err := w.rotate(); err != nil {
				st.Failed += b.Len() - i
				note(err)
				return st, failure(st, first)
			}
			st.Bytes += w.size // the new file's section header
			committed, known = w.size, w.nextIface
			have = false
		}
		if !have {
			id := w.nextIface
			name := w.ifaceName(key)
			idb := w.block(blockIDB, func(x []byte) []byte {
				x = binary.LittleEndian.AppendUint16(x, uint16(w.o.LinkType))
				x = binary.LittleEndian.AppendUint16(x, 0)
				x = binary.LittleEndian.AppendUint32(x, uint32(w.o.SnapLen))
				x = appendOpt(x, optIfName, []byte(name))
				x = appendOpt(x, optIfTsresol, []byte{9})
				return appendOpt(x, optEndOfOpt, nil)
			})
			if _, err := w.bw.Write(idb); err != nil {
				return lose(i, fmt.Errorf("interface block for %s: %w", name, err))
			}
			w.ifaces[key] = id
			w.nextIface++
			w.size += int64(len(idb))
			pendingBytes += int64(len(idb))
		}
		ts := received.UnixNano()
		if ns, err := b.RxTimestamp(i); err == nil {
			ts = ns
		}
		id := w.ifaces[key]
		epb := w.block(blockEPB, func(x []byte) []byte {
			x = binary.LittleEndian.AppendUint32(x, id)
			x = binary.LittleEndian.AppendUint32(x, uint32(uint64(ts)>>32))
			x = binary.LittleEndian.AppendUint32(x, uint32(uint64(ts)))
			x = binary.LittleEndian.AppendUint32(x, uint32(capLen))
			x = binary.LittleEndian.AppendUint32(x, uint32(len(data)))
			x = append(x, data[:capLen]...)
			for k := capLen; k < pad4(capLen); k++ {
				x = append(x, 0)
			}
			x = appendOpt(x, optComment, []byte(comment))
			x = appendOpt(x, optEpbQueue, binary.LittleEndian.AppendUint32(nil, uint32(key.queue)))
			return appendOpt(x, optEndOfOpt, nil)
		})
		if _, err := w.bw.Write(epb); err != nil {
			return lose(i, fmt.Errorf("packet %d: %w", i, err))
		}
		w.size += int64(len(epb))
		w.packets++
		pendingN++
		pendingBytes += int64(len(epb))
		h.progress(Status{Completed: st.Completed + pendingN, Failed: st.Failed, Bytes: st.Bytes + pendingBytes})
	}
	if err := w.bw.Flush(); err != nil {
		return lose(b.Len(), fmt.Errorf("flushing %s: %w", w.f.Name(), err))
	}
	commit()
	return st, failure(st, first)
}

// rotate closes the current (flushed) file and starts the next; a failure breaks the writer.
func (w *PcapngWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		w.broken = fmt.Errorf("pcapng capture: closing %s for rotation: %w", w.f.Name(), err)
		w.f = nil
		return w.broken
	}
	w.index++
	if err := w.openFile(); err != nil {
		w.broken = fmt.Errorf("pcapng capture: rotating to %s: %w", w.pathFor(w.index), err)
		w.f = nil
		return w.broken
	}
	return nil
}

// Sync flushes the file to stable storage (fsync), after the writes submitted so far.
func (w *PcapngWriter) Sync() error {
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
func (w *PcapngWriter) Close() error {
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
		return fmt.Errorf("pcapng capture: closing %s: %w", w.f.Name(), err)
	}
	return nil
}
