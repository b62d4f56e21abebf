package integration

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// captureFrame is an Ethernet/IPv4/UDP frame carrying seq and random bytes, built with
// gopacket, so that the captured payloads decode as Ethernet in tshark.
func captureFrame(t *testing.T, seq, size int) []byte {
	t.Helper()
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	binary.BigEndian.PutUint32(payload, uint32(seq))
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{192, 0, 2, 1}, DstIP: net.IP{192, 0, 2, 2}}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 5000}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// frameSeq reads the sequence number back out of a captured frame.
func frameSeq(f []byte) int {
	if len(f) < 46 {
		return -1
	}
	return int(binary.BigEndian.Uint32(f[42:]))
}

// sendFrames sends each frame as one UDP datagram from the session's port 0, queue 0.
func sendFrames(t *testing.T, s *daqiri.Session, frames [][]byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < len(frames); {
		if time.Now().After(deadline) {
			t.Fatalf("sending timed out at frame %d", i)
		}
		n := min(32, len(frames)-i)
		b, err := s.TxBurst(0, 0, n)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		for k := 0; k < n; k++ {
			if err := b.SetUDPPayload(k, frames[i+k]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Send(b); err != nil {
			b.Free()
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
		i += n
		if i%256 == 0 {
			// Keep the sender from overrunning the receiver's socket buffer.
			time.Sleep(time.Millisecond)
		}
	}
}

// tsharkPacket is what the test reads from `tshark -T json -x`.
type tsharkPacket struct {
	Source struct {
		Layers struct {
			FrameRaw []any `json:"frame_raw"`
			Frame    struct {
				Len       string `json:"frame.len"`
				CapLen    string `json:"frame.cap_len"`
				TimeEpoch string `json:"frame.time_epoch"`
				Protocols string `json:"frame.protocols"`
			} `json:"frame"`
		} `json:"layers"`
	} `json:"_source"`
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	return testutil.RequireTool(t, name, "Debian: apt-get install tshark; CI installs it from .ci/apt.d/capture.txt")
}

// parseEpoch parses "seconds.nanoseconds" exactly (no float rounding).
func parseEpoch(t *testing.T, s string) time.Time {
	t.Helper()
	sec, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000000000")[:9]
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("timestamp %q", s)
	}
	return time.Unix(a, b)
}

// TestCapturePcapFromNetnsTraffic sends Ethernet frames as UDP datagrams across a namespace
// pair with the socket engine, writes every received burst to a pcap file and raw files,
// and reads them back three ways — gopacket's pcapgo, tshark, capinfos — checking the
// packet count, lengths, bytes and timestamps (the kernel's RX timestamps: non-decreasing,
// inside the capture window) against what was sent.
func TestCapturePcapFromNetnsTraffic(t *testing.T) {
	p := netns.NewPair(t)
	tshark, capinfos := needTool(t, "tshark"), needTool(t, "capinfos")
	server := netip.AddrPortFrom(p.AddrB, uint16(20000+rand.IntN(20000)))
	rxs := openIn(t, p.B, oneSided(udpEndpoint("rx", config.ModeServer, server, netip.AddrPort{}, "rxmem", true, 8<<20), "rxmem", 1024, 9216))
	txs := openIn(t, p.A, oneSided(udpEndpoint("tx", config.ModeClient, netip.AddrPort{}, server, "txmem", false, 0), "txmem", 512, 9216))
	defer txs.Close()
	defer rxs.Close()

	dir := t.TempDir()
	pcapPath := filepath.Join(dir, "netns.pcap")
	w, err := capture.OpenPcap(pcapPath, capture.PcapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rawDir := filepath.Join(dir, "raw")
	os.Mkdir(rawDir, 0o755)
	rw, err := capture.NewRawWriter(capture.RawOptions{Dir: rawDir, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	n := 500 + rand.IntN(300)
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = captureFrame(t, i, 4+rand.IntN(4000))
	}

	start := time.Now()
	type result struct {
		packets, bursts int
		err             error
	}
	done := make(chan result, 1)
	stop := make(chan struct{})
	go func() {
		var r result
		for {
			b, err := rxs.RxBurst(0, 0)
			if errors.Is(err, daqiri.ErrNotReady) {
				select {
				case <-stop:
					done <- r
					return
				default:
				}
				time.Sleep(50 * time.Microsecond)
				continue
			}
			if err != nil {
				r.err = err
				done <- r
				return
			}
			if _, err := w.Write(b); err != nil {
				r.err = err
			}
			if _, err := rw.Write(b); err != nil {
				r.err = err
			}
			r.packets += b.Len()
			r.bursts++
			b.Free()
		}
	}()
	sendFrames(t, txs, frames)
	// Stop once everything sent is received or counted as dropped (bounded).
	for i := 0; ; i++ {
		st := rxs.Stats().Ports[0].Rx[0]
		if st.Packets+st.Dropped >= uint64(n) && st.Bursts > 0 || i > 3000 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; rxs.Stats().Ports[0].Rx[0].RingUsed > 0 && i < 3000; i++ {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	res := <-done
	end := time.Now()
	if res.err != nil {
		t.Fatal(res.err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	st := rxs.Stats().Ports[0].Rx[0]
	if uint64(res.packets) != st.Packets || st.Packets+st.Dropped != uint64(n) || res.packets == 0 {
		t.Fatalf("received %d (stats %+v) of %d sent", res.packets, st, n)
	}
	if st.Dropped > 0 {
		t.Logf("%d of %d dropped (%v); checking the %d received", st.Dropped, n, st.Drops, res.packets)
	}
	got := res.packets

	// What the captured packets must be: a subsequence of the frames, in order.
	var want [][]byte
	last := -1
	check := func(what string, i int, data []byte) {
		t.Helper()
		seq := frameSeq(data)
		if seq <= last || seq >= n || !bytes.Equal(data, frames[seq]) {
			t.Fatalf("%s %d: not frame %d (previous %d)", what, i, seq, last)
		}
		last = seq
		if len(want) < got {
			want = append(want, frames[seq])
		}
	}

	// 1. gopacket's reader.
	f, err := os.Open(pcapPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Snaplen() != capture.DefaultSnapLen || r.Resolution() != gopacket.TimestampResolutionNanosecond {
		t.Fatalf("header: link %v snaplen %d resolution %v", r.LinkType(), r.Snaplen(), r.Resolution())
	}
	var stamps []time.Time
	for i := 0; i < got; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		check("record", i, data)
		if ci.Length != len(data) || ci.CaptureLength != len(data) {
			t.Fatalf("record %d: lengths %d/%d for %d bytes", i, ci.CaptureLength, ci.Length, len(data))
		}
		if ci.Timestamp.Before(start) || ci.Timestamp.After(end) || (i > 0 && ci.Timestamp.Before(stamps[i-1])) {
			t.Fatalf("record %d: timestamp %v not in [%v, %v] or before the previous %v", i, ci.Timestamp, start, end, stamps[len(stamps)-1])
		}
		stamps = append(stamps, ci.Timestamp)
		// gopacket decodes the frame as what was sent.
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		if u, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP); !ok || u.DstPort != 5000 {
			t.Fatalf("record %d does not decode as UDP to port 5000", i)
		}
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Fatalf("after %d records: %v", got, err)
	}

	// 2. tshark: count, lengths, exact bytes and nanosecond timestamps.
	out, err := exec.Command(tshark, "-r", pcapPath, "-T", "json", "-x").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var pkts []tsharkPacket
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark JSON: %v", err)
	}
	if len(pkts) != got {
		t.Fatalf("tshark read %d packets, want %d", len(pkts), got)
	}
	for i, tp := range pkts {
		l := tp.Source.Layers
		raw, _ := l.FrameRaw[0].(string)
		data, err := hex.DecodeString(raw)
		if err != nil || !bytes.Equal(data, want[i]) {
			t.Fatalf("tshark packet %d: bytes differ", i)
		}
		if l.Frame.Len != strconv.Itoa(len(want[i])) || l.Frame.CapLen != l.Frame.Len {
			t.Fatalf("tshark packet %d: frame.len %s cap_len %s, want %d", i, l.Frame.Len, l.Frame.CapLen, len(want[i]))
		}
		if ts := parseEpoch(t, l.Frame.TimeEpoch); !ts.Equal(stamps[i]) {
			t.Fatalf("tshark packet %d: time %v, pcapgo read %v", i, ts, stamps[i])
		}
		if !strings.HasPrefix(l.Frame.Protocols, "eth:ethertype:ip:udp") {
			t.Fatalf("tshark packet %d decodes as %s", i, l.Frame.Protocols)
		}
	}

	// 3. capinfos: file type, encapsulation, precision, snaplen, count, data size, first and
	// last timestamps, strict time order.
	out, err = exec.Command(capinfos, "-M", "-T", "-t", "-E", "-l", "-c", "-d", "-a", "-e", "-S", "-o", "-F", pcapPath).Output()
	if err != nil {
		t.Fatalf("capinfos: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("capinfos table:\n%s", out)
	}
	head, vals := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
	info := map[string]string{}
	for i := range head {
		if i < len(vals) {
			info[head[i]] = vals[i]
		}
	}
	var dataSize int
	for _, d := range want {
		dataSize += len(d)
	}
	for k, v := range map[string]string{
		"File type": "nsecpcap", "File encapsulation": "ether", "File time precision": "nanoseconds",
		"Packet size limit": strconv.Itoa(capture.DefaultSnapLen), "Number of packets": strconv.Itoa(got),
		"Data size (bytes)": strconv.Itoa(dataSize), "Strict time order": "True",
	} {
		if info[k] != v {
			t.Errorf("capinfos %q = %q, want %q\n%s", k, info[k], v, out)
		}
	}
	if a := parseEpoch(t, info["Start time"]); !a.Equal(stamps[0]) {
		t.Errorf("capinfos start %v, first record %v", a, stamps[0])
	}
	if e := parseEpoch(t, info["End time"]); !e.Equal(stamps[len(stamps)-1]) {
		t.Errorf("capinfos end %v, last record %v", e, stamps[len(stamps)-1])
	}

	// Raw files of the same bursts: one per packet, never overwritten, the same bytes.
	names, _ := filepath.Glob(filepath.Join(rawDir, "p_*"))
	sort.Strings(names)
	if len(names) != got {
		t.Fatalf("%d raw files for %d packets in %d bursts", len(names), got, res.bursts)
	}
	for i, name := range names {
		if data, _ := os.ReadFile(name); !bytes.Equal(data, want[i]) {
			t.Fatalf("%s differs from packet %d", name, i)
		}
	}
	t.Logf("%d frames sent, %d received in %d bursts; pcap checked with pcapgo, tshark and capinfos; %d raw files", n, got, res.bursts, len(names))

	// Files written by Debian's own tools: a pcapng is foreign and must be refused untouched;
	// a microsecond pcap is refused for a nanosecond writer (untouched) and appended to by a
	// microsecond one.
	editcap := needTool(t, "editcap")
	ng := filepath.Join(dir, "copy.pcapng")
	us := filepath.Join(dir, "copy-us.pcap")
	for _, c := range [][]string{{"-F", "pcapng", pcapPath, ng}, {"-F", "pcap", pcapPath, us}} {
		if out, err := exec.Command(editcap, c...).CombinedOutput(); err != nil {
			t.Fatalf("editcap %v: %v\n%s", c, err, out)
		}
	}
	for _, tc := range []struct{ path, msg string }{{ng, "pcapng"}, {us, "microseconds"}} {
		before, _ := os.ReadFile(tc.path)
		stBefore, _ := os.Stat(tc.path)
		_, err := capture.OpenPcap(tc.path, capture.PcapOptions{})
		if err == nil || !errors.Is(err, daqiri.ErrInvalidParameter) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("append to %s: %v", tc.path, err)
		}
		after, _ := os.ReadFile(tc.path)
		stAfter, _ := os.Stat(tc.path)
		if !bytes.Equal(before, after) || !stBefore.ModTime().Equal(stAfter.ModTime()) {
			t.Fatalf("%s changed by a refused append", tc.path)
		}
	}
	uw, err := capture.OpenPcap(us, capture.PcapOptions{Microseconds: true})
	if err != nil {
		t.Fatal(err)
	}
	k := 5 + rand.IntN(20)
	more := make([][]byte, k)
	for i := range more {
		more[i] = captureFrame(t, n+i, 64+rand.IntN(1000))
	}
	sendFrames(t, txs, more)
	appended := 0
	for i := 0; appended < k && i < 20000; i++ {
		b, err := rxs.RxBurst(0, 0)
		if err != nil {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		st, err := uw.Write(b)
		if err != nil {
			t.Fatal(err)
		}
		appended += st.Completed
		b.Free()
	}
	if err := uw.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(capinfos, "-M", "-c", "-t", "-o", us).Output()
	if err != nil || !strings.Contains(string(out), "Number of packets:   "+strconv.Itoa(got+appended)) || !strings.Contains(string(out), "File type:           pcap\n") ||
		!strings.Contains(string(out), "Strict time order:   True") || appended == 0 {
		t.Fatalf("capinfos after appending %d packets to editcap's %d-packet microsecond file: %v\n%s", appended, got, err, out)
	}
}
