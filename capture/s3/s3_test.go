package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/capture/s3/s3test"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// burst builds a received burst over regions with random segment lengths up to the buffer
// size and random bytes; some packets get RX timestamps. It returns each packet's logical
// bytes and timestamp.
func burst(t *testing.T, meta *engine.MetaPool, regions []*engine.Region, n int) (*engine.Burst, [][]byte, []int64) {
	t.Helper()
	b, err := meta.Get(0, 0, regions, false, n)
	if err != nil {
		t.Fatal(err)
	}
	pkts := make([][]byte, n)
	ts := make([]int64, n)
	for i := 0; i < n; i++ {
		offs := make([]uint64, len(regions))
		lens := make([]uint32, len(regions))
		for s, r := range regions {
			idx, ok := r.Get()
			if !ok {
				t.Fatal("region exhausted")
			}
			offs[s], lens[s] = uint64(idx)*uint64(r.BufSize), uint32(rand.IntN(r.BufSize+1))
		}
		if rand.IntN(2) == 0 {
			ts[i] = time.Now().UnixNano() + int64(i)
		}
		b.AppendSegments(offs, lens, 0, ts[i])
		for s := range regions {
			seg := b.Segment(s, i)
			for j := range seg {
				seg[j] = byte(rand.Uint32())
			}
			pkts[i] = append(pkts[i], seg...)
		}
	}
	return b, pkts, ts
}

func newWriter(t *testing.T, srv *s3test.Server, bucket string, mod func(*Config)) *Writer {
	t.Helper()
	cfg := Config{Bucket: bucket, Region: srv.Region, Endpoint: srv.Endpoint, PathStyle: true, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// list returns every key under prefix (paginated).
func list(t *testing.T, c *awss3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	var token *string
	for page := 0; page < 1000; page++ {
		out, err := c.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), ContinuationToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, *o.Key)
		}
		if out.IsTruncated == nil || !*out.IsTruncated {
			sort.Strings(keys)
			return keys
		}
		token = out.NextContinuationToken
	}
	t.Fatal("too many pages")
	return nil
}

func get(t *testing.T, c *awss3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip writes bursts as per-packet objects and as burst objects to a real local
// S3 server, then lists and downloads everything: keys, contents and (for burst objects)
// the index must equal what was sent.
func TestRoundTrip(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "caps")
	w := newWriter(t, srv, "caps", nil)
	hdr, pay := regiontest.Host(t, "hdr", 256, 64), regiontest.Host(t, "pay", 256, 4096)
	meta, _ := engine.NewMetaPool("rx", 8, 32, false)
	want := map[string][]byte{}
	wantBursts := map[string][][]byte{}
	wantTS := map[string][]int64{}
	var ups []*Upload
	for k := 0; k < 3; k++ {
		n := 1 + rand.IntN(24)
		b, pkts, ts := burst(t, meta, []*engine.Region{hdr, pay}, n)
		off := 0
		if k == 1 {
			off = 64 / 2 // skip part of the header segment
		}
		u, err := w.WritePackets(b, "run/pkt", off)
		if err != nil {
			t.Fatal(err)
		}
		ub, err := w.WriteBurst(b, "run/burst", off)
		if err != nil {
			t.Fatal(err)
		}
		// The bytes were staged before returning: the burst may go back at once.
		b.Free()
		var trimmed [][]byte
		for i, p := range pkts {
			p = p[min(off, len(p)):]
			trimmed = append(trimmed, p)
			want[PacketKey("run/pkt", u.Seq(), i)] = p
		}
		wantBursts[BurstKey("run/burst", ub.Seq())] = trimmed
		wantTS[BurstKey("run/burst", ub.Seq())] = ts
		ups = append(ups, u, ub)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var total capture.Status
	for _, u := range ups {
		st, err := u.Wait(ctx)
		if err != nil {
			t.Fatalf("upload: %v\nserver: %s", err, srv.Output())
		}
		total.Add(st)
		for _, o := range u.Objects() {
			if !o.Done || o.Err != nil || o.Attempts != 1 {
				t.Fatalf("object %+v", o)
			}
		}
	}
	if total.Completed != len(want)+len(wantBursts) {
		t.Fatalf("%d objects completed, want %d", total.Completed, len(want)+len(wantBursts))
	}
	if w.Staged() != 0 {
		t.Fatalf("%d bytes still staged", w.Staged())
	}
	keys := list(t, w.Client(), "caps", "run/pkt")
	if len(keys) != len(want) {
		t.Fatalf("listed %d packet objects, want %d", len(keys), len(want))
	}
	for _, k := range keys {
		if got := get(t, w.Client(), "caps", k); !bytes.Equal(got, want[k]) {
			t.Fatalf("%s: %d bytes differ from the %d sent", k, len(got), len(want[k]))
		}
	}
	bkeys := list(t, w.Client(), "caps", "run/burst")
	if len(bkeys) != len(wantBursts) {
		t.Fatalf("listed %d burst objects, want %d", len(bkeys), len(wantBursts))
	}
	for _, k := range bkeys {
		pkts, err := DecodeBurst(get(t, w.Client(), "caps", k))
		if err != nil {
			t.Fatal(err)
		}
		if len(pkts) != len(wantBursts[k]) {
			t.Fatalf("%s: %d packets, want %d", k, len(pkts), len(wantBursts[k]))
		}
		for i, p := range pkts {
			if !bytes.Equal(p.Data, wantBursts[k][i]) || p.RxTimestamp != wantTS[k][i] {
				t.Fatalf("%s packet %d differs", k, i)
			}
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WritePackets(nil, "x", 0); !errors.Is(err, engine.ErrNullPtr) {
		t.Fatal(err)
	}
}

// TestServerKilledMidRun kills the server while uploads are in flight: every object must end
// with a status (uploaded, or an error naming it), Wait must return, staging must drain,
// Close must return, and no goroutine may be left behind.
func TestServerKilledMidRun(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bucket")
	w := newWriter(t, srv, "bucket", func(c *Config) {
		c.MaxInflight = 8
		c.MaxAttempts = 3
		c.RetryBackoff = time.Millisecond
		c.MaxBackoff = 4 * time.Millisecond
		c.AttemptTimeout = 3 * time.Second
	})
	r := regiontest.Host(t, "r", 1024, 16384)
	meta, _ := engine.NewMetaPool("rx", 64, 16, false)
	var ups []*Upload
	total := 0
	for k := 0; k < 40; k++ {
		b, _, _ := burst(t, meta, []*engine.Region{r}, 16)
		u, err := w.WritePackets(b, "crash", 0)
		if err != nil {
			t.Fatal(err)
		}
		b.Free()
		ups = append(ups, u)
		total += 16
	}
	// Kill the server once the first object is in.
	for i := 0; ; i++ {
		if st, _ := ups[0].Poll(); st.Completed > 0 {
			break
		}
		if i > 3000 {
			t.Fatalf("nothing uploaded: %+v\n%s", ups[0].Objects(), srv.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sum capture.Status
	var failed []ObjectStatus
	for _, u := range ups {
		st, err := u.Wait(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("uploads hung after the server died")
		}
		sum.Add(st)
		for _, o := range u.Objects() {
			if !o.Done {
				t.Fatalf("object %s has no outcome", o.Key)
			}
			if o.Err != nil {
				failed = append(failed, o)
			}
		}
	}
	t.Logf("%d objects: %d uploaded, %d failed; e.g. %v", total, sum.Completed, sum.Failed, failed[0].Err)
	if sum.Completed+sum.Failed != total || sum.Failed == 0 || sum.Completed == 0 {
		t.Fatalf("status %+v for %d objects", sum, total)
	}
	if len(failed) != sum.Failed || !strings.Contains(failed[0].Err.Error(), failed[0].Key) {
		t.Fatalf("per-object errors do not name their objects: %v", failed[0].Err)
	}
	if w.Staged() != 0 {
		t.Fatalf("%d bytes still staged", w.Staged())
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// blackHole accepts connections and never answers: a server that hangs.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + l.Addr().String()
}

// TestHungServer: each attempt has a deadline, so a server that never answers yields
// per-object errors; and Close with a deadline aborts what is still trying.
func TestHungServer(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	ep := blackHole(t)
	r := regiontest.Host(t, "r", 16, 256)
	meta, _ := engine.NewMetaPool("rx", 4, 4, false)
	w, err := New(context.Background(), Config{Bucket: "b", Region: "us-east-1", Endpoint: ep, PathStyle: true, AccessKey: "a", SecretKey: "s",
		MaxAttempts: 2, AttemptTimeout: 100 * time.Millisecond, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := burst(t, meta, []*engine.Region{r}, 2)
	u, err := w.WritePackets(b, "h", 0)
	b.Free()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := u.Wait(ctx)
	if st.Failed != 2 || !errors.Is(err, engine.ErrGenericFailure) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%+v %v", st, err)
	}
	for _, o := range u.Objects() {
		if o.Attempts != 2 {
			t.Fatalf("%s tried %d times, want 2: %v", o.Key, o.Attempts, o.Err)
		}
	}
	w.Close(context.Background())

	// Long attempt deadlines: Close's own deadline aborts them.
	w, err = New(context.Background(), Config{Bucket: "b", Region: "us-east-1", Endpoint: ep, PathStyle: true, AccessKey: "a", SecretKey: "s", AttemptTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ = burst(t, meta, []*engine.Region{r}, 3)
	u, err = w.WriteBurst(b, "h", 0)
	b.Free()
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer ccancel()
	if err := w.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	if _, err := u.Poll(); !errors.Is(err, context.Canceled) {
		t.Fatalf("aborted upload: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	testutil.NoGoroutineLeak(t)
	for _, c := range []Config{
		{Region: "r"},
		{Bucket: "b"},
		{Bucket: "b", Region: "r", AccessKey: "a"},
		{Bucket: "b", Region: "r", MaxInflight: -1},
		{Bucket: "b", Region: "r", MaxStagedBytes: -1},
	} {
		if _, err := New(context.Background(), c); !errors.Is(err, engine.ErrInvalidParameter) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bucket")
	w := newWriter(t, srv, "bucket", func(c *Config) { c.MaxStagedBytes = 10000 })
	r := regiontest.Host(t, "r", 64, 4096)
	meta, _ := engine.NewMetaPool("rx", 4, 16, false)
	b, _, _ := burst(t, meta, []*engine.Region{r}, 1)
	for b.TotalBytes() == 0 {
		b.Free()
		b, _, _ = burst(t, meta, []*engine.Region{r}, 1)
	}
	defer b.Free()
	if _, err := w.WritePackets(b, "", 0); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Error("empty prefix:", err)
	}
	if _, err := w.WritePackets(b, "p", -1); !errors.Is(err, engine.ErrInvalidParameter) {
		t.Error("negative offset:", err)
	}
	big, _, _ := burst(t, meta, []*engine.Region{r}, 16)
	defer big.Free()
	for big.TotalBytes() <= 10000 {
		t.Fatal("random burst too small for the staging test")
	}
	if _, err := w.WriteBurst(big, "p", 0); !errors.Is(err, engine.ErrNoSpaceAvailable) {
		t.Errorf("over the staging limit: %v", err)
	}
	if w.Staged() != 0 {
		t.Errorf("refused write left %d bytes staged", w.Staged())
	}
	// A bucket that does not exist is not worth retrying: one attempt, a clear error.
	w2 := newWriter(t, srv, "no-such-bucket", nil)
	u, err := w2.WritePackets(b, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("missing bucket: %v", err)
	}
	if o := u.Objects()[0]; o.Attempts != 1 {
		t.Errorf("missing bucket tried %d times", o.Attempts)
	}
	w2.Close(context.Background())
	w.Close(context.Background())
	if _, err := w.WritePackets(b, "p", 0); !errors.Is(err, capture.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestDecodeBurstBadInput(t *testing.T) {
	r := regiontest.Host(t, "r", 8, 512)
	meta, _ := engine.NewMetaPool("rx", 2, 8, false)
	b, pkts, _ := burst(t, meta, []*engine.Region{r}, 5)
	defer b.Free()
	sizes := make([]int, len(pkts))
	sum := burstHeaderLen + burstEntryLen*len(pkts)
	for i, p := range pkts {
		sizes[i] = len(p)
		sum += len(p)
	}
	obj := make([]byte, sum)
	at := encodeIndex(obj, b, sizes)
	for _, p := range pkts {
		at += copy(obj[at:], p)
	}
	if got, err := DecodeBurst(obj); err != nil || len(got) != 5 {
		t.Fatal(got, err)
	}
	bad := func(name string, o []byte, msg string) {
		if _, err := DecodeBurst(o); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", name, err, msg)
		}
	}
	bad("empty", nil, "not a daqiri burst object")
	bad("magic", append([]byte("XQRBURST"), obj[8:]...), "not a daqiri burst object")
	v := append([]byte{}, obj...)
	v[8] = 9
	bad("version", v, "version 9")
	c := append([]byte{}, obj...)
	c[12] = 200
	bad("count", c, "claims 200 packets")
	bad("trailing", append(append([]byte{}, obj...), 1), "after its last packet")
	if sum > burstHeaderLen+burstEntryLen*5 && sizes[4] > 0 {
		bad("short", obj[:len(obj)-1], "runs past the end")
	}
}

// TestNoCredentialInErrors (issue 19 item 5): the secret key appeared in the error for a
// negative limit (the whole Config formatted with %+v). No error, formatted Config or failed
// upload's message may contain it.
func TestNoCredentialInErrors(t *testing.T) {
	const secret = "S3CR3T-do-not-print-0123456789"
	bad := []Config{
		{Bucket: "b", Region: "r", AccessKey: "AKID", SecretKey: secret, MaxInflight: -1},
		{Bucket: "b", Region: "r", AccessKey: "AKID", SecretKey: secret, AttemptTimeout: -1},
		{Bucket: "b", Region: "r", AccessKey: "AKID", SecretKey: secret, Endpoint: "http://AKID:" + secret + "@127.0.0.1:1"},
		{Region: "r", AccessKey: "AKID", SecretKey: secret},
	}
	for _, c := range bad {
		_, err := New(context.Background(), c)
		if err == nil {
			t.Fatalf("accepted %v", c)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error reveals the secret: %v", err)
		}
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			if s := fmt.Sprintf(f, c); strings.Contains(s, secret) {
				t.Errorf("%s of a Config reveals the secret: %s", f, s)
			}
			if s := fmt.Sprintf(f, &c); strings.Contains(s, secret) {
				t.Errorf("%s of a *Config reveals the secret: %s", f, s)
			}
		}
	}
	// A server that rejects the signature: the upload error names the failure, not the key.
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bucket")
	w := newWriter(t, srv, "bucket", func(c *Config) { c.SecretKey = secret; c.MaxAttempts = 1 })
	defer w.Close(context.Background())
	r := regiontest.Host(t, "r", 8, 512)
	meta, _ := engine.NewMetaPool("rx", 2, 8, false)
	b, _, _ := burst(t, meta, []*engine.Region{r}, 2)
	defer b.Free()
	u, err := w.WritePackets(b, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	err = u.Close()
	if err == nil {
		t.Fatal("upload with a wrong secret succeeded")
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", u.Objects()), secret) {
		t.Errorf("upload error reveals the secret: %v", err)
	}
}
