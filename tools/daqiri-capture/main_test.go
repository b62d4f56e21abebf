package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/capture/s3"
	"github.com/daqiri-go/daqiri/capture/s3/s3test"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// helperEnv makes this test binary run daqiri-capture's main (arguments JSON-encoded in the
// variable), so tests drive a real process and can send it SIGINT.
const helperEnv = "DAQIRI_CAPTURE_HELPER_ARGS"

func TestHelperCaptureProcess(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper process for the daqiri-capture tests; runs only when started by them")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(3)
	}
	main2(args)
}

// main2 is main with arguments (main reads os.Args).
func main2(args []string) {
	os.Args = append([]string{"daqiri-capture"}, args...)
	main()
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--pcap", "x.pcap"}, "--config is required"},
		{[]string{"--config", "c.yaml"}, "nothing to write"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--s3-mode", "object"}, "--s3-mode must be"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--linktype", "token-ring"}, "--linktype"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--offset", "-1"}, "negative"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "extra"}, "unexpected argument"},
		// Issue 30 item 5: refused while parsing (c.yaml does not exist: reading it exits 1).
		{[]string{"--config", "c.yaml", "--pcap", "x", "--rotate-mb", "NaN"}, "--rotate-mb must be 0 (no rotation) or between 0.000001 and 1000000000 MB, got NaN"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--rotate-mb", "Inf"}, "--rotate-mb must be 0"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--rotate-mb", "1e-9"}, "--rotate-mb must be 0"},
		{[]string{"--config", "c.yaml", "--pcap", "x", "--snaplen", "300000"}, "--snaplen must be between 1 and 262144"},
		{[]string{"--config", "c.yaml", "--s3-bucket", "b", "--s3-inflight", "100000"}, "--s3-inflight must be between 1 and 1024"},
		{[]string{"--config", "c.yaml", "--s3-bucket", "b", "--s3-staged-mb", "9000000000000"}, "--s3-staged-mb must be between 1 and 1048576"},
	} {
		var out, errb bytes.Buffer
		if rc := run(context.Background(), tc.args, &out, &errb); rc != 2 || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: rc %d, stderr %q; want 2 and %q", tc.args, rc, errb.String(), tc.msg)
		}
	}
	var out, errb bytes.Buffer
	if rc := run(context.Background(), []string{"--config", "/nonexistent.yaml", "--pcap", "x"}, &out, &errb); rc != 1 {
		t.Errorf("missing config: rc %d", rc)
	}
	for s, want := range map[string]layers.LinkType{"ethernet": 1, "raw": layers.LinkTypeRaw, "user0": 147, "105": 105} {
		if lt, err := linkType(s, "socket"); err != nil || lt != want {
			t.Errorf("linktype %s: %v %v", s, lt, err)
		}
	}
	if lt, _ := linkType("auto", "socket"); lt != 147 {
		t.Errorf("auto for socket streams: %v", lt)
	}
	if lt, _ := linkType("auto", "raw"); lt != layers.LinkTypeEthernet {
		t.Errorf("auto for raw streams: %v", lt)
	}
}

const udpConfig = `daqiri:
  cfg:
    version: 1
    stream_type: socket
    log_level: error
    rx_meta_buffers: 64
    memory_regions:
    - name: rx_mem
      kind: host
      affinity: 0
      num_bufs: 2048
      buf_size: 2048
    interfaces:
    - name: server
      address: 127.0.0.1
      socket_config:
        mode: server
        local_addr: udp://127.0.0.1:PORT
      rx:
        queues:
        - name: rxq
          id: 0
          cpu_core: 0
          batch_size: 32
          timeout_us: 200
          memory_regions: [rx_mem]
`

// frame builds an Ethernet/IPv4/UDP frame with a sequence number and random payload, so the
// pcap decodes as Ethernet.
func frame(seq int) []byte {
	n := 8 + rand.IntN(1400)
	f := make([]byte, 42+n)
	copy(f[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	copy(ip[12:16], []byte{192, 0, 2, 1})
	copy(ip[16:20], []byte{192, 0, 2, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(f[34:], 4000)
	binary.BigEndian.PutUint16(f[36:], 5000)
	binary.BigEndian.PutUint16(f[38:], uint16(8+n))
	binary.BigEndian.PutUint32(f[42:], uint32(seq))
	for i := 46; i < len(f); i++ {
		f[i] = byte(rand.Uint32())
	}
	return f
}

// pcapRecords counts whole records in a pcap file that is being written (0 when unreadable).
func pcapRecords(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < capture.FileHeaderLen {
		return 0
	}
	n := 0
	for at := capture.FileHeaderLen; at+capture.RecordHeaderLen <= len(b); n++ {
		at += capture.RecordHeaderLen + int(binary.LittleEndian.Uint32(b[at+8:]))
		if at > len(b) {
			break
		}
	}
	return n
}

// TestCaptureToPcapRawAndS3 runs daqiri-capture on a loopback UDP server writing pcap, raw
// files and S3 burst objects at once, sends it Ethernet frames as UDP payloads, interrupts
// it with SIGINT and checks the exit status, the summary, and that every output holds
// exactly the datagrams sent, in order, with arrival timestamps inside the run.
func TestCaptureToPcapRawAndS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "captures")
	dir := t.TempDir()
	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	cfg := filepath.Join(dir, "rx.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(udpConfig, "PORT", strconv.Itoa(port), 1)), 0o644)
	rawDir := filepath.Join(dir, "raw")
	os.Mkdir(rawDir, 0o755)
	pcapPath := filepath.Join(dir, "cap.pcap")
	args, _ := json.Marshal([]string{"--config", cfg, "--pcap", pcapPath, "--linktype", "ethernet", "--raw", rawDir,
		"--s3-bucket", "captures", "--s3-endpoint", srv.Endpoint, "--s3-path-style", "--s3-prefix", "run1", "--json"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCaptureProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(args), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	var stdout, stderr testutil.SyncBuffer
	cmd.Stdout = &stdout
	errPipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errPipe)
		once := sync.Once{}
		for sc.Scan() {
			stderr.Write([]byte(sc.Text() + "\n"))
			if strings.Contains(sc.Text(), "capturing server") {
				once.Do(func() { close(ready) })
			}
		}
		exited <- cmd.Wait()
	}()
	defer cmd.Process.Kill()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("daqiri-capture exited: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("daqiri-capture did not start:\n%s", stderr.String())
	}

	conn, err := net.Dial("udp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	n := 300 + rand.IntN(200)
	sent := make([][]byte, n)
	for i := range sent {
		sent[i] = frame(i)
		if _, err := conn.Write(sent[i]); err != nil {
			t.Fatal(err)
		}
		if i%32 == 31 {
			// Pace the sender a little so loopback does not overrun the socket buffer.
			time.Sleep(time.Millisecond)
		}
	}
	// Wait until every datagram is in the file, or the count stops growing (the kernel may
	// drop on a loaded machine; drops are accounted for below).
	for i, last, quiet := 0, -1, 0; ; i++ {
		c := pcapRecords(pcapPath)
		if c == n || quiet > 50 {
			break
		}
		if c == last {
			quiet++
		} else {
			last, quiet = c, 0
		}
		if i > 3000 {
			t.Fatalf("pcap holds %d of %d records\n%s", c, n, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	end := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("daqiri-capture did not stop on SIGINT")
	}
	var sum summary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if sum.Stopped != "interrupted" || sum.Packets+sum.Dropped != uint64(n) || sum.Packets == 0 || len(sum.Errors) != 0 {
		t.Fatalf("summary %+v for %d sent", sum, n)
	}
	got := int(sum.Packets)
	if sum.Pcap.Written != got || sum.Raw.Written != got || sum.S3.Failed != 0 || sum.S3.Written == 0 {
		t.Fatalf("outputs: pcap %+v raw %+v s3 %+v", sum.Pcap, sum.Raw, sum.S3)
	}
	if sum.Dropped > 0 {
		t.Logf("the kernel dropped %d of %d datagrams (%v); checking the %d captured", sum.Dropped, n, sum.Drops, got)
	}
	// check is the i-th captured packet: one of the datagrams, after the previous one.
	lastSeq := -1
	check := func(what string, i int, p []byte) {
		t.Helper()
		if len(p) < 46 {
			t.Fatalf("%s %d: %d bytes", what, i, len(p))
		}
		seq := int(binary.BigEndian.Uint32(p[42:]))
		if seq <= lastSeq || seq >= n || !bytes.Equal(p, sent[seq]) {
			t.Fatalf("%s %d: not datagram %d (after %d) or out of order", what, i, seq, lastSeq)
		}
		lastSeq = seq
	}

	// pcap: a complete file (whole records to the end), Ethernet, nanosecond timestamps in
	// the capture window, non-decreasing, and the exact datagrams.
	f, err := os.Open(pcapPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Resolution() != gopacket.TimestampResolutionNanosecond {
		t.Fatalf("link type %v resolution %v", r.LinkType(), r.Resolution())
	}
	var prev time.Time
	for i := 0; i < got; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		check("record", i, data)
		if ci.Length != len(data) {
			t.Fatalf("record %d: original length %d, captured %d", i, ci.Length, len(data))
		}
		if ci.Timestamp.Before(start.Add(-time.Second)) || ci.Timestamp.After(end.Add(time.Second)) || ci.Timestamp.Before(prev) {
			t.Fatalf("record %d timestamp %v outside [%v, %v] or before %v", i, ci.Timestamp, start, end, prev)
		}
		prev = ci.Timestamp
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Fatalf("after %d records: %v (want a clean end of file)", got, err)
	}

	// raw: n files; in name order they are the datagrams in order.
	names, _ := filepath.Glob(filepath.Join(rawDir, "pkt_*"))
	sort.Strings(names)
	if len(names) != got {
		t.Fatalf("%d raw files, want %d", len(names), got)
	}
	lastSeq = -1
	for i, name := range names {
		data, _ := os.ReadFile(name)
		check(name, i, data)
	}

	// S3: burst objects, listed in key order, decode to the datagrams in order.
	client := awss3.New(awss3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
	out, err := client.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("captures"), Prefix: aws.String("run1_")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != sum.S3.Written {
		t.Fatalf("%d objects listed, summary says %d", len(out.Contents), sum.S3.Written)
	}
	var objs [][]byte
	for _, o := range out.Contents {
		if !regexp.MustCompile(`^run1_[0-9]{8}\.dqb$`).MatchString(*o.Key) {
			t.Fatalf("key %q", *o.Key)
		}
		g, err := client.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String("captures"), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(g.Body)
		g.Body.Close()
		pkts, err := s3.DecodeBurst(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			objs = append(objs, p.Data)
		}
	}
	if len(objs) != got {
		t.Fatalf("S3 holds %d packets, want %d", len(objs), got)
	}
	lastSeq = -1
	for i, p := range objs {
		check("S3 packet", i, p)
	}
	t.Logf("%d datagrams sent, %d captured → pcap, %d raw files, %d S3 objects; %.3f s", n, got, len(names), len(out.Contents), sum.Seconds)
}
