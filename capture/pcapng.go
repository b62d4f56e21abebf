package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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
	captureFile
	o         PcapngOptions
	packets   int64 // packet blocks in the current section
	ifaces    map[ifaceKey]uint32
	nextIface uint32 // id of the next interface block in the current section
	known     uint32 // nextIface at the last commit: interface blocks known to be in the file
	blk       []byte
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
	w := &PcapngWriter{o: o}
	w.open, w.write = w.openFile, w.writeBurst
	w.kept = func() { w.known = w.nextIface }
	// A truncation also forgets the interface blocks written since the last commit.
	w.lost = func(n int) {
		for k, id := range w.ifaces {
			if id >= w.known {
				delete(w.ifaces, k)
			}
		}
		w.nextIface = w.known
		w.packets -= int64(n)
	}
	if err := w.setup("pcapng", path, &w.o.SnapLen, &w.o.LinkType, o.RotateBytes, o.Device); err != nil {
		return nil, err
	}
	return w, nil
}

// openFile opens the file of the current index, checks an existing one and starts a section.
func (w *PcapngWriter) openFile() (int64, error) {
	path := w.pathFor(w.index)
	f, size, err := w.openRegular(path)
	if err != nil {
		return 0, err
	}
	var idbs uint32
	if size > 0 {
		if idbs, err = checkPcapng(f, size); err != nil {
			f.Close()
			return 0, fmt.Errorf("pcapng capture: cannot append to %s: %w (%w)", path, err, engine.ErrInvalidParameter)
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return 0, fmt.Errorf("pcapng capture: %w", err)
		}
	}
	w.f, w.size, w.packets = f, size, 0
	w.ifaces, w.nextIface, w.known = map[ifaceKey]uint32{}, idbs, idbs
	w.bw = bufio.NewWriterSize(f, 256<<10)
	w.files = append(w.files, path)
	if size > 0 {
		// Continue the last section: a new section would be valid pcapng too, but tshark
		// 4.0 resolves interface ids of later sections against the first one's.
		return 0, nil
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
		return 0, fmt.Errorf("pcapng capture: writing the section header of %s: %w", path, err)
	}
	w.size += int64(len(shb))
	return int64(len(shb)), nil
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

// writeBurst appends b's packets as enhanced packet blocks, each interface's description
// block before its first packet in the file.
func (w *PcapngWriter) writeBurst(h *Handle, b *engine.Burst, received time.Time) (Status, error) {
	bt := w.newBatch(b.Len())
	key := ifaceKey{port: b.Port(), queue: b.Queue(), tx: b.IsTx()}
	var ps []piece
	for i := 0; i < b.Len(); i++ {
		data, more, err := w.packet(b, i, ps)
		ps = more
		if err != nil {
			bt.skip(i, err)
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
		if w.full(idbLen+epbLen, w.packets == 0) {
			if !w.next(bt, i) {
				return bt.result()
			}
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
				return w.lose(bt, i, fmt.Errorf("interface block for %s: %w", name, err))
			}
			w.ifaces[key] = id
			w.nextIface++
			w.size += int64(len(idb))
			bt.bytes += int64(len(idb))
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
			return w.lose(bt, i, fmt.Errorf("packet %d: %w", i, err))
		}
		w.size += int64(len(epb))
		w.packets++
		bt.n++
		bt.bytes += int64(len(epb))
		h.progress(bt.progress())
	}
	w.flush(bt, b.Len())
	return bt.result()
}
