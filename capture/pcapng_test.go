package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// ngPacket is what a test wrote for one packet.
type ngPacket struct {
	iface string
	ts    int64
	flow  uint32
	queue int
	data  []byte
}

// ngBurst builds a received burst on (port, queue) of n random frames with flow ids and
// RX timestamps (0 = none).
func ngBurst(t *testing.T, meta *engine.MetaPool, r *engine.Region, port, queue int, flows []uint32, ts []int64) (*engine.Burst, [][]byte) {
	t.Helper()
	b, err := meta.Get(port, queue, []*engine.Region{r}, true, len(flows))
	if err != nil {
		t.Fatal(err)
	}
	var pkts [][]byte
	for k := range flows {
		idx, ok := r.Get()
		if !ok {
			t.Fatal("region exhausted")
		}
		p := make([]byte, 60+rand.IntN(1400))
		for j := range p {
			p[j] = byte(rand.Uint32())
		}
		copy(p[12:], []byte{0x88, 0xb5}) // local experimental EtherType: tshark leaves it alone
		i := b.Append(uint64(idx)*uint64(r.BufSize), uint32(len(p)), flows[k], ts[k])
		copy(b.Packet(i), p)
		pkts = append(pkts, p)
	}
	return b, pkts
}

// tsharkFields reads a capture with tshark: one line per packet with the given fields.
func tsharkFields(t *testing.T, path string, fields ...string) [][]string {
	t.Helper()
	tshark := testutil.RequireTool(t, "tshark", "apt-get install tshark")
	args := []string{"-n", "-r", path, "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark %v: %v\n%s", args, err, out)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.HasPrefix(l, "Running as user") {
			rows = append(rows, strings.Split(l, "|"))
		}
	}
	return rows
}

// TestPcapngTshark writes bursts from two ports and three queues, some packets with RX
// timestamps and some without, synchronously and asynchronously, and has tshark read the
// file back: every packet with its interface (port/queue), nanosecond timestamp, length,
// queue (epb_queue) and flow id (comment); capinfos counts them. gopacket's pcapng reader,
// another implementation, reads the bytes.
func TestPcapngTshark(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	path := filepath.Join(t.TempDir(), "c.pcapng")
	w, err := OpenPcapng(path, PcapngOptions{PortNames: map[int]string{0: "rx_port"}})
	if err != nil {
		t.Fatal(err)
	}
	r := regiontest.Host(t, "r", 256, 2048)
	meta := metaPool(t, 8, 32)
	base := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	var want []ngPacket
	var hs []*Handle
	var bursts []*engine.Burst
	for n := 0; n < 6; n++ {
		port, queue := n%2, n%3
		cnt := 1 + rand.IntN(20)
		flows, ts := make([]uint32, cnt), make([]int64, cnt)
		for i := range flows {
			flows[i] = uint32(rand.IntN(1 << 24))
			if rand.IntN(3) > 0 {
				ts[i] = base.UnixNano() + int64(n*100+i)*1_000_000_007 + int64(rand.IntN(1e9))
			}
		}
		b, pkts := ngBurst(t, meta, r, port, queue, flows, ts)
		recv := base.Add(time.Duration(n) * time.Hour).Add(time.Duration(rand.IntN(1e9)))
		name := "port1"
		if port == 0 {
			name = "rx_port"
		}
		for i, p := range pkts {
			pt := ngPacket{iface: fmt.Sprintf("%s/rx/q%d", name, queue), ts: ts[i], flow: flows[i], queue: queue, data: p}
			if pt.ts == 0 {
				pt.ts = recv.UnixNano()
			}
			want = append(want, pt)
		}
		if n%2 == 0 {
			st, err := w.WriteAt(b, recv)
			if err != nil || st.Completed != cnt || st.Failed != 0 {
				t.Fatalf("burst %d: %+v %v", n, st, err)
			}
			b.Free()
		} else {
			h, err := w.WriteAtAsync(b, recv)
			if err != nil {
				t.Fatal(err)
			}
			hs, bursts = append(hs, h), append(bursts, b)
		}
	}
	for i, h := range hs {
		<-h.Done()
		if st, err := h.Poll(); err != nil || st.Failed != 0 {
			t.Fatalf("async write %d: %+v %v", i, st, err)
		}
		h.Close()
		bursts[i].Free()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	rows := tsharkFields(t, path, "frame.interface_name", "frame.time_epoch", "frame.len", "frame.cap_len", "frame.interface_queue", "frame.comment")
	if len(rows) != len(want) {
		t.Fatalf("tshark read %d packets, wrote %d", len(rows), len(want))
	}
	for i, row := range rows {
		wp := want[i]
		epoch := fmt.Sprintf("%d.%09d", wp.ts/1e9, wp.ts%1e9)
		exp := []string{wp.iface, epoch, strconv.Itoa(len(wp.data)), strconv.Itoa(len(wp.data)), strconv.Itoa(wp.queue), fmt.Sprintf("flow_id=%d queue=%d", wp.flow, wp.queue)}
		if strings.Join(row, "|") != strings.Join(exp, "|") {
			t.Fatalf("packet %d: tshark says %q, wrote %q", i, row, exp)
		}
	}
	capinfos := testutil.RequireTool(t, "capinfos", "apt-get install tshark")
	out, err := exec.Command(capinfos, "-M", "-c", "-F", "-T", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\t"+strconv.Itoa(len(want))) || !strings.Contains(string(out), "pcapng") {
		t.Fatalf("capinfos: %v\n%s", err, out)
	}
	// The bytes, through gopacket's reader.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		data, ci, err := ng.ReadPacketData()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !bytes.Equal(data, want[i].data) || ci.Timestamp.UnixNano() != want[i].ts {
			t.Fatalf("packet %d: %d bytes at %v; wrote %d at %d", i, len(data), ci.Timestamp, len(want[i].data), want[i].ts)
		}
	}
}

// TestPcapngRotationAndAppend rotates at a small size (each file a whole pcapng section with
// its own interface blocks, every packet in exactly one file), appends a new section to an
// existing file, and refuses to append to a classic pcap, a truncated file or a symlink.
func TestPcapngRotationAndAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rot.pcapng")
	w, err := OpenPcapng(path, PcapngOptions{RotateBytes: 4096, SnapLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	r := regiontest.Host(t, "r", 256, 2048)
	meta := metaPool(t, 4, 64)
	total := 0
	for n := 0; n < 5; n++ {
		flows := make([]uint32, 20)
		b, _ := ngBurst(t, meta, r, 0, n%2, flows, make([]int64, 20))
		st, err := w.Write(b)
		if err != nil || st.Completed != 20 {
			t.Fatalf("%+v %v", st, err)
		}
		total += 20
		b.Free()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if len(files) < 3 {
		t.Fatalf("%d files for ~%d KiB at 4 KiB each", len(files), total)
	}
	got := 0
	for _, f := range files {
		st, _ := os.Stat(f)
		rows := tsharkFields(t, f, "frame.interface_name", "frame.cap_len", "frame.len")
		if st.Size() > 4096 && len(rows) > 1 {
			t.Fatalf("%s: %d bytes with %d packets", f, st.Size(), len(rows))
		}
		for _, row := range rows {
			if c, _ := strconv.Atoi(row[1]); c > 512 || !strings.HasPrefix(row[0], "port0/rx/q") {
				t.Fatalf("%s: %q", f, row)
			}
		}
		got += len(rows)
	}
	if got != total {
		t.Fatalf("%d packets over %d files, wrote %d", got, len(files), total)
	}

	// Appending opens a second section in the same file.
	w2, err := OpenPcapng(files[0], PcapngOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := len(tsharkFields(t, files[0], "frame.len"))
	b, _ := ngBurst(t, meta, r, 3, 1, []uint32{7, 8}, []int64{1, 2})
	if _, err := w2.Write(b); err != nil {
		t.Fatal(err)
	}
	b.Free()
	w2.Close()
	rows := tsharkFields(t, files[0], "frame.interface_name", "frame.comment")
	if len(rows) != before+2 || rows[len(rows)-1][0] != "port3/rx/q1" || rows[len(rows)-1][1] != "flow_id=8 queue=1" {
		t.Fatalf("after append: %d rows (had %d), last %q", len(rows), before, rows[len(rows)-1])
	}

	// Refusals leave the file alone.
	classic := filepath.Join(dir, "c.pcap")
	pw, err := OpenPcap(classic, PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw.Close()
	data, _ := os.ReadFile(files[0])
	cut := filepath.Join(dir, "cut.pcapng")
	os.WriteFile(cut, data[:len(data)-3], 0o644)
	bad := filepath.Join(dir, "bad.pcapng")
	wrong := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(wrong[len(wrong)-4:], 12345)
	os.WriteFile(bad, wrong, 0o644)
	link := filepath.Join(dir, "link.pcapng")
	os.Symlink(files[0], link)
	for _, c := range []struct{ path, want string }{
		{classic, "classic pcap"},
		{cut, "ends inside the block"},
		{bad, "ends with length 12345"},
		{link, "is a symbolic link"},
	} {
		st0 := stateOf(t, c.path)
		_, err := OpenPcapng(c.path, PcapngOptions{})
		mustContain(t, err, c.want)
		if !stateOf(t, c.path).same(st0) {
			t.Fatalf("%s changed by a refused open", c.path)
		}
	}
	if _, err := OpenPcapng(filepath.Join(dir, "x.pcapng"), PcapngOptions{SnapLen: -1}); err == nil {
		t.Fatal("negative snaplen accepted")
	}
}

// TestCaptureIPv6 builds Ethernet/IPv6/UDP frames with the burst's header helpers
// (SetIPv6Header, the UDP checksum IPv6 requires) and writes them to pcap and pcapng; tshark
// reads back every address, port and payload length and finds every UDP checksum good.
func TestCaptureIPv6(t *testing.T) {
	dir := t.TempDir()
	r := regiontest.Host(t, "r", 64, 2048)
	meta := metaPool(t, 2, 32)
	b, err := meta.Get(0, 2, []*engine.Region{r}, true, 16)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		src, dst     netip.Addr
		sport, dport uint16
		n            int
	}
	var ws []want
	for k := 0; k < 16; k++ {
		idx, _ := r.Get()
		i := b.Append(uint64(idx)*uint64(r.BufSize), 0, uint32(k), 0)
		var s16, d16 [16]byte
		for j := range s16 {
			s16[j], d16[j] = byte(rand.Uint32()), byte(rand.Uint32())
		}
		s16[0], d16[0] = 0x20, 0xfd
		w := want{netip.AddrFrom16(s16), netip.AddrFrom16(d16), uint16(1 + rand.IntN(65535)), uint16(1 + rand.IntN(65535)), rand.IntN(1400)}
		pl := testutil.RandBytes(w.n)
		if err := errors.Join(
			b.SetEthHeader(i, net.HardwareAddr{2, 0, 0, 0, 0, 2}, net.HardwareAddr{2, 0, 0, 0, 0, 1}),
			b.SetIPv6Header(i, 8+len(pl), 17, w.src, w.dst),
			b.SetUDPHeader(i, len(pl), w.sport, w.dport),
			b.SetUDPPayload(i, pl)); err != nil {
			t.Fatal(err)
		}
		if b.PacketLen(i) != 14+40+8+len(pl) {
			t.Fatalf("packet %d is %d bytes", i, b.PacketLen(i))
		}
		ws = append(ws, w)
	}
	if err := b.SetIPv6Header(0, 8, 17, netip.MustParseAddr("10.0.0.1"), ws[0].dst); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Fatalf("IPv4 address in an IPv6 header: %v", err)
	}
	pcapPath, ngPath := filepath.Join(dir, "six.pcap"), filepath.Join(dir, "six.pcapng")
	pw, err := OpenPcap(pcapPath, PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := OpenPcapng(ngPath, PcapngOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(b); err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Write(b); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	nw.Close()
	b.Free()
	for _, path := range []string{pcapPath, ngPath} {
		rows := tsharkFields(t, path, "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport", "udp.length", "udp.checksum.status")
		if len(rows) != len(ws) {
			t.Fatalf("%s: tshark read %d packets, wrote %d", path, len(rows), len(ws))
		}
		for i, row := range rows {
			w := ws[i]
			exp := []string{w.src.String(), w.dst.String(), strconv.Itoa(int(w.sport)), strconv.Itoa(int(w.dport)), strconv.Itoa(8 + w.n), "1"}
			if strings.Join(row, "|") != strings.Join(exp, "|") {
				t.Fatalf("%s packet %d: tshark %q, want %q (checksum status 1 = good)", path, i, row, exp)
			}
		}
	}
}
