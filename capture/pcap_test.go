package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
	"strconv"
)

type record struct {
	ts       time.Time
	data     []byte
	orig     int
	captured int
}

// readPcap reads a whole file with gopacket's pcapgo reader (an implementation other than
// the writer's own header checks).
func readPcap(t *testing.T, path string) (*pcapgo.Reader, []record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var recs []record
	for i := 0; i < 1e6; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return r, recs
		}
		if err != nil {
			t.Fatalf("%s record %d: %v", path, len(recs), err)
		}
		recs = append(recs, record{ci.Timestamp, data, ci.Length, ci.CaptureLength})
	}
	t.Fatal("too many records")
	return nil, nil
}

// TestPcapRecords writes bursts whose packets have RX timestamps or none, over one or two
// segments, and reads them back: header fields, lengths, bytes, and timestamps (the RX
// timestamp to the nanosecond, or the receive time given to the write).
func TestPcapRecords(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	for _, micro := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.pcap")
		w, err := OpenPcap(path, PcapOptions{Microseconds: micro})
		if err != nil {
			t.Fatal(err)
		}
		hdr := regiontest.Host(t, "hdr", 64, 128)
		data := regiontest.Host(t, "data", 64, 9000)
		one := regiontest.Host(t, "one", 64, 9000)
		meta := metaPool(t, 4, 32)
		var want []record
		base := time.Now().Add(-time.Hour)
		for burst := 0; burst < 4; burst++ {
			n := 1 + rand.IntN(20)
			ts := make([]int64, n)
			for i := range ts {
				if rand.IntN(3) > 0 {
					ts[i] = base.UnixNano() + int64(burst*1000+i)*1234567 + int64(rand.IntN(1000))
				}
			}
			var b *engine.Burst
			var pkts [][]byte
			if burst%2 == 0 {
				b, pkts = makeBurst(t, nil, meta, []*engine.Region{one}, randLens(n, 1, 9000), ts)
			} else {
				lens := make([][]int, n)
				for i := range lens {
					lens[i] = []int{rand.IntN(129), rand.IntN(9001)}
				}
				b, pkts = makeBurst(t, nil, meta, []*engine.Region{hdr, data}, lens, ts)
			}
			recv := base.Add(time.Duration(burst) * time.Minute).Add(time.Duration(rand.IntN(1e9)))
			st, err := w.WriteAt(b, recv)
			if err != nil {
				t.Fatal(err)
			}
			var bytesWant int64
			for i, p := range pkts {
				r := record{ts: recv, data: p, orig: len(p), captured: len(p)}
				if ts[i] != 0 {
					r.ts = time.Unix(0, ts[i])
				}
				want = append(want, r)
				bytesWant += int64(RecordHeaderLen + len(p))
			}
			if st.Completed != n || st.Bytes != bytesWant {
				t.Fatalf("status %+v, want %d packets %d bytes", st, n, bytesWant)
			}
			b.Free()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, got := readPcap(t, path)
		if r.Snaplen() != DefaultSnapLen || r.LinkType() != layers.LinkTypeEthernet {
			t.Fatalf("snaplen %d link type %v", r.Snaplen(), r.LinkType())
		}
		raw, _ := os.ReadFile(path)
		magic := binary.LittleEndian.Uint32(raw)
		if (micro && magic != MagicMicroseconds) || (!micro && magic != MagicNanoseconds) {
			t.Fatalf("micro=%v: magic %#x", micro, magic)
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i := range want {
			wt := want[i].ts
			if micro {
				wt = wt.Truncate(time.Microsecond)
			}
			if !got[i].ts.Equal(wt) {
				t.Fatalf("record %d: timestamp %v, want %v", i, got[i].ts, wt)
			}
			if got[i].orig != want[i].orig || got[i].captured != want[i].captured || !bytes.Equal(got[i].data, want[i].data) {
				t.Fatalf("record %d: %d/%d bytes, want %d", i, got[i].captured, got[i].orig, want[i].orig)
			}
		}
	}
}

// TestPcapSnapLenAndDevice truncates records at a small snaplen (keeping the original length)
// and copies a device segment through the DeviceIO.
func TestPcapSnapLenAndDevice(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dev := &fakeDevice{}
	path := filepath.Join(t.TempDir(), "s.pcap")
	snap := 64 + rand.IntN(64)
	w, err := OpenPcap(path, PcapOptions{SnapLen: snap, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	meta := metaPool(t, 2, 16)
	lens := [][]int{{14, 10}, {42, 500}, {0, 300}, {snap, 0}}
	b, pkts := makeBurst(t, dev, meta, []*engine.Region{regiontest.Host(t, "h", 8, 128), dev.region(t, "d", 8, 1024)}, lens, nil)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	b.Free()
	w.Close()
	r, got := readPcap(t, path)
	if r.Snaplen() != uint32(snap) || len(got) != len(pkts) {
		t.Fatalf("snaplen %d, %d records", r.Snaplen(), len(got))
	}
	for i, p := range pkts {
		c := min(len(p), snap)
		if got[i].orig != len(p) || got[i].captured != c || !bytes.Equal(got[i].data, p[:c]) {
			t.Fatalf("record %d: %d/%d, want %d/%d", i, got[i].captured, got[i].orig, c, len(p))
		}
	}
}

// TestPcapAppend closes and reopens a file and appends: one valid file with every record.
func TestPcapAppend(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	path := filepath.Join(t.TempDir(), "a.pcap")
	r := regiontest.Host(t, "rx", 64, 2048)
	meta := metaPool(t, 2, 16)
	total := 0
	for round := 0; round < 3; round++ {
		w, err := OpenPcap(path, PcapOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + rand.IntN(16)
		b, _ := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(n, 60, 2048), nil)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Free()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		total += n
		if _, got := readPcap(t, path); len(got) != total {
			t.Fatalf("round %d: %d records, want %d", round, len(got), total)
		}
	}
	// An empty existing file gets a header, like a new one.
	empty := filepath.Join(filepath.Dir(path), "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	w, err := OpenPcap(empty, PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, _ := os.Stat(empty); st.Size() != FileHeaderLen {
		t.Fatalf("empty file got %d bytes", st.Size())
	}
}

// TestPcapAppendRefused offers files that must not be appended to and checks each is refused
// with an error naming why, and left byte-for-byte and timestamp untouched.
func TestPcapAppendRefused(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	good := func(magic uint32, link uint32) []byte {
		h := make([]byte, FileHeaderLen)
		binary.LittleEndian.PutUint32(h[0:], magic)
		binary.LittleEndian.PutUint16(h[4:], 2)
		binary.LittleEndian.PutUint16(h[6:], 4)
		binary.LittleEndian.PutUint32(h[16:], 65535)
		binary.LittleEndian.PutUint32(h[20:], link)
		return h
	}
	rec := func(n int) []byte {
		r := make([]byte, RecordHeaderLen+n)
		binary.LittleEndian.PutUint32(r[8:], uint32(n))
		binary.LittleEndian.PutUint32(r[12:], uint32(n))
		return r
	}
	bigEndian := good(MagicNanoseconds, 1)
	binary.BigEndian.PutUint32(bigEndian[0:], MagicNanoseconds)
	badVersion := good(MagicNanoseconds, 1)
	binary.LittleEndian.PutUint16(badVersion[4:], 1)
	// A pcapng section header block, as Wireshark writes by default.
	pcapng := []byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0, 0, 0}
	random := make([]byte, 100+rand.IntN(100))
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	random[0] = 'x'
	for _, tc := range []struct {
		name string
		data []byte
		opts PcapOptions
		msg  string
	}{
		{"pcapng", pcapng, PcapOptions{}, "pcapng"},
		{"text", []byte("this is not a capture file at all\n"), PcapOptions{}, "not a pcap file"},
		{"random", random, PcapOptions{}, "not a pcap file"},
		{"short", []byte{0xd4, 0xc3, 0xb2}, PcapOptions{}, "too short"},
		{"micro-vs-nano", good(MagicMicroseconds, 1), PcapOptions{}, "microseconds"},
		{"nano-vs-micro", good(MagicNanoseconds, 1), PcapOptions{Microseconds: true}, "nanoseconds"},
		{"big-endian", bigEndian, PcapOptions{}, "big-endian"},
		{"version", badVersion, PcapOptions{}, "version is 1.4"},
		{"linktype", good(MagicNanoseconds, 101), PcapOptions{}, "link type is 101"},
		{"partial-record", append(append(good(MagicNanoseconds, 1), rec(40)...), rec(100)[:50]...), PcapOptions{}, "ends inside the record at byte 80"},
		{"partial-header", append(append(good(MagicNanoseconds, 1), rec(40)...), 1, 2, 3), PcapOptions{}, "inside a record header at byte 80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".pcap")
			if err := os.WriteFile(path, tc.data, 0o640); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			os.Chtimes(path, old, old)
			before := stateOf(t, path)
			w, err := OpenPcap(path, tc.opts)
			if err == nil {
				w.Close()
				t.Fatal("append accepted")
			}
			if !errors.Is(err, engine.ErrInvalidParameter) {
				t.Errorf("error %v does not wrap ErrInvalidParameter", err)
			}
			mustContain(t, err, "cannot append to "+path, tc.msg)
			if after := stateOf(t, path); !before.same(after) {
				t.Fatalf("file changed: %d bytes → %d, mtime %v → %v", len(before.data), len(after.data), before.mod, after.mod)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
				t.Fatalf("mode changed to %v", st.Mode())
			}
		})
	}
	// A file with whole records and matching header is accepted.
	ok := filepath.Join(dir, "ok.pcap")
	os.WriteFile(ok, append(append(good(MagicNanoseconds, 1), rec(40)...), rec(0)...), 0o644)
	w, err := OpenPcap(ok, PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.SnapLen() != 65535 {
		t.Fatalf("appending uses snaplen %d, want the file's 65535", w.SnapLen())
	}
	w.Close()

	for _, o := range []PcapOptions{{SnapLen: -1}, {RotateBytes: -5}} {
		if _, err := OpenPcap(filepath.Join(dir, "x.pcap"), o); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := OpenPcap("", PcapOptions{}); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := OpenPcap(dir, PcapOptions{}); err == nil {
		t.Error("a directory was accepted as the file")
	}
	if _, err := OpenPcap(filepath.Join(dir, "no/such/dir/x.pcap"), PcapOptions{}); err == nil {
		t.Error("missing directory accepted")
	}
}

// TestPcapRotation writes past a small size limit: every file stays within it (or holds one
// record), every file is a valid pcap, and the records across files are all there in order.
// Reopening continues the last file.
func TestPcapRotation(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "rot.pcap")
	limit := int64(4096 + rand.IntN(4096))
	r := regiontest.Host(t, "rx", 128, 2048)
	meta := metaPool(t, 4, 32)
	var want [][]byte
	write := func() {
		w, err := OpenPcap(path, PcapOptions{RotateBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 3; k++ {
			b, pkts := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(1+rand.IntN(30), 1, 2048), nil)
			if _, err := w.Write(b); err != nil {
				t.Fatal(err)
			}
			want = append(want, pkts...)
			b.Free()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write()
	write()
	var got [][]byte
	for i := 0; i < 1000; i++ {
		p := path
		if i > 0 {
			p = filepath.Join(dir, "rot."+strconv.Itoa(i)+".pcap")
		}
		st, err := os.Stat(p)
		if err != nil {
			if i < 2 {
				t.Fatalf("only %d files for %d records", i, len(want))
			}
			break
		}
		_, recs := readPcap(t, p)
		if st.Size() > limit && len(recs) != 1 {
			t.Fatalf("%s: %d bytes over the %d limit with %d records", p, st.Size(), limit, len(recs))
		}
		for _, rec := range recs {
			got = append(got, rec.data)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d records across files, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestPcapAsyncOrder submits many bursts asynchronously and checks the records come out in
// submission order.
func TestPcapAsyncOrder(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	path := filepath.Join(t.TempDir(), "o.pcap")
	w, err := OpenPcap(path, PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := regiontest.Host(t, "rx", 512, 256)
	meta := metaPool(t, 32, 16)
	var want [][]byte
	var hs []*Handle
	var bs []*engine.Burst
	for k := 0; k < 20; k++ {
		b, pkts := makeBurst(t, nil, meta, []*engine.Region{r}, randLens(1+rand.IntN(16), 1, 256), nil)
		h, err := w.WriteAsync(b)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, pkts...)
		hs = append(hs, h)
		bs = append(bs, b)
	}
	// Close waits for what is in flight.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for k, h := range hs {
		if _, err := h.Poll(); err != nil {
			t.Fatalf("burst %d: %v", k, err)
		}
		bs[k].Free()
	}
	_, got := readPcap(t, path)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].data, want[i]) {
			t.Fatalf("record %d out of order or wrong", i)
		}
	}
	if _, err := w.WriteAsync(bs[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// TestPcapSymlinkRefused (issue 19 item 7): a capture file, or a rotation file, that is a
// symbolic link is refused instead of written through (the link's target kept intact); a
// FIFO is refused without waiting for a reader.
func TestPcapSymlinkRefused(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cap.pcap", "dangling.pcap"} {
		target := victim
		if name == "dangling.pcap" {
			target = filepath.Join(dir, "would-be-created")
		}
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if w, err := OpenPcap(p, PcapOptions{}); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
			if w != nil {
				w.Close()
			}
			t.Fatalf("%s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("link target changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "would-be-created")); err == nil {
		t.Fatal("a file was created through a dangling link")
	}
	// A rotation file planted as a link: the rotation fails, nothing is written through it.
	rot := filepath.Join(dir, "rot.pcap")
	if err := os.Symlink(victim, filepath.Join(dir, "rot.1.pcap")); err != nil {
		t.Fatal(err)
	}
	// (Opening resumes at the highest rotation index present, so the refusal may come there.)
	w, werr := OpenPcap(rot, PcapOptions{RotateBytes: 1})
	if werr == nil {
		r := regiontest.Host(t, "rx", 8, 2048)
		meta := metaPool(t, 2, 8)
		b, _ := makeBurst(t, nil, meta, []*engine.Region{r}, [][]int{{100}, {100}}, nil)
		_, werr = w.Write(b)
		b.Free()
		w.Close()
	}
	if werr == nil || !strings.Contains(werr.Error(), "is a symbolic link") {
		t.Fatalf("rotation onto a link: %v", werr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("link target changed by rotation: %q", b)
	}
	fifo := filepath.Join(dir, "fifo.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPcap(fifo, PcapOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("fifo: %v", err)
	}
}

// TestRotationFailureCounted (issue 30 item 4): once a rotation has failed (a link planted
// at the next file's name after the writer opened), every later write counts each of its
// packets as failed; completed + failed is every packet handed to the writer.
func TestRotationFailureCounted(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	for _, format := range []string{"pcap", "pcapng"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			rot := filepath.Join(dir, "rot."+format)
			var w interface {
				Write(*engine.Burst) (Status, error)
				Close() error
			}
			var err error
			if format == "pcap" {
				w, err = OpenPcap(rot, PcapOptions{RotateBytes: 1})
			} else {
				w, err = OpenPcapng(rot, PcapngOptions{RotateBytes: 1})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := os.Symlink(filepath.Join(dir, "victim"), filepath.Join(dir, "rot.1."+format)); err != nil {
				t.Fatal(err)
			}
			r := regiontest.Host(t, "rx", 8, 2048)
			meta := metaPool(t, 1, 8)
			var sum Status
			for k := 0; k < 3; k++ {
				b, _ := makeBurst(t, nil, meta, []*engine.Region{r}, [][]int{{100}, {100}, {100}, {100}, {100}, {100}, {100}, {100}}, nil)
				st, err := w.Write(b)
				b.Free()
				if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
					t.Errorf("write %d: %v, want the failed rotation", k, err)
				}
				if st.Completed+st.Failed != 8 {
					t.Errorf("write %d: %+v does not account for its 8 packets", k, st)
				}
				sum.Add(st)
			}
			if sum.Completed != 1 || sum.Failed != 23 {
				t.Fatalf("24 packets: %+v, want 1 completed (the first file's one record) and 23 failed", sum)
			}
		})
	}
}
