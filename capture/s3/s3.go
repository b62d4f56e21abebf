// Package s3 uploads received packets to an S3-compatible object store (upstream
// daqiri_s3_writer_create / daqiri_write_raw_to_s3_objects_async, upstream-daqiri.md §5.4),
// with the AWS SDK for Go v2.
//
// Two shapes: WritePackets stores one object per packet as upstream does; WriteBurst stores
// one object per burst — the packets concatenated after a small index (see EncodeBurst) —
// which is what a user storing a stream wants: one PUT per burst instead of one per packet.
// Both copy the bytes into writer-owned staging memory before returning, so the caller may
// free the burst at once. Uploads run in the background, at most MaxInflight at a time and
// with at most MaxStagedBytes staged; each object is retried with exponential backoff and
// each attempt has a deadline, so a server that dies or stops answering turns into
// per-object errors, never a hang.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/engine"
)

// MaxObjectSize is the largest object a single PUT may carry (5 GiB, S3's limit); larger
// ones are refused with engine.ErrNotSupported as upstream does (no multipart).
const MaxObjectSize = 5 << 30

// Config configures a Writer (upstream S3WriterConfig plus retry settings).
type Config struct {
	Bucket string // required
	Region string // required
	// Endpoint overrides the service address (upstream endpoint_override), e.g.
	// "http://127.0.0.1:7070" for a local server.
	Endpoint string
	// PathStyle addresses buckets as <endpoint>/<bucket>/<key> instead of
	// <bucket>.<endpoint>/<key> (virtual-hosted).
	PathStyle bool
	// AccessKey and SecretKey are static credentials. When both are empty the SDK's default
	// chain is used (environment, shared files, then instance metadata). Uploads use a
	// transport of the writer's own, which trusts the system's CAs (SSL_CERT_FILE and
	// SSL_CERT_DIR apply; AWS_CA_BUNDLE does not).
	AccessKey, SecretKey string
	// MaxInflight bounds concurrent uploads (default 8, as upstream).
	MaxInflight int
	// MaxStagedBytes bounds the bytes copied and not yet uploaded (default 1 GiB, as
	// upstream); a write that would exceed it fails with engine.ErrNoSpaceAvailable.
	MaxStagedBytes int64
	// MaxAttempts is how many times one object is tried (default 4).
	MaxAttempts int
	// RetryBackoff is the wait before the second attempt (default 50 ms); it doubles for each
	// later one up to MaxBackoff (default 2 s), with up to 50% random jitter.
	RetryBackoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one PUT (default 30 s).
	AttemptTimeout time.Duration
	// Device copies device-memory segments to the staging memory (capture/gds).
	Device capture.DeviceIO
}

// String formats the configuration with the secret key (and any user information in the
// endpoint) redacted, so that printing it (%v,
// %+v, %s) never reveals a credential.
func (c Config) String() string {
	if c.SecretKey != "" {
		c.SecretKey = "<redacted>"
	}
	if u, err := url.Parse(c.Endpoint); err == nil && u.User != nil {
		u.User = url.User("<redacted>")
		c.Endpoint = u.String()
	} else if err != nil {
		c.Endpoint = "<unparsable, redacted>"
	}
	type plain Config // without the String method
	return fmt.Sprintf("%+v", plain(c))
}

// GoString is String for %#v.
func (c Config) GoString() string { return "s3.Config" + c.String() }

func (c *Config) defaults() error {
	if c.Bucket == "" || c.Region == "" {
		return fmt.Errorf("s3 capture: bucket and region are required (bucket %q, region %q): %w", c.Bucket, c.Region, engine.ErrInvalidParameter)
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"MaxInflight", int64(c.MaxInflight)}, {"MaxStagedBytes", c.MaxStagedBytes}, {"MaxAttempts", int64(c.MaxAttempts)},
		{"RetryBackoff", int64(c.RetryBackoff)}, {"MaxBackoff", int64(c.MaxBackoff)}, {"AttemptTimeout", int64(c.AttemptTimeout)}} {
		if l.v < 0 {
			// Name the field, never the whole Config: it holds the secret key.
			return fmt.Errorf("s3 capture: %s must be ≥ 0, got %d: %w", l.name, l.v, engine.ErrInvalidParameter)
		}
	}
	if u, err := url.Parse(c.Endpoint); c.Endpoint != "" && (err != nil || u.User != nil) {
		// The URL is not repeated: it may hold a password.
		return fmt.Errorf("s3 capture: the endpoint must be a URL without user or password (give credentials as AccessKey and SecretKey): %w", engine.ErrInvalidParameter)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return fmt.Errorf("s3 capture: access key and secret key must be given together: %w", engine.ErrInvalidParameter)
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 8
	}
	if c.MaxStagedBytes == 0 {
		c.MaxStagedBytes = 1 << 30
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 4
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 50 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 2 * time.Second
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 30 * time.Second
	}
	return nil
}

// Writer uploads bursts to one bucket. Methods are safe for concurrent use.
type Writer struct {
	cfg       Config
	client    *awss3.Client
	transport *http.Transport
	sem       chan struct{} // one token per upload in flight
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu     sync.Mutex
	staged int64
	seq    uint64
	closed bool
}

// New checks cfg and builds the client; it does not contact the server.
func New(ctx context.Context, cfg Config) (*Writer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// A transport of our own, so Close can drop its idle keep-alive connections (and the
	// goroutines that serve them).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.MaxInflight
	tr.ResponseHeaderTimeout = cfg.AttemptTimeout
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc := &http.Client{Transport: tr}
	opt := func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.HTTPClient = hc
		// Retries are ours (per object, with our backoff and deadlines), not the SDK's.
		o.Retryer = aws.NopRetryer{}
		// Checksums only where the API requires them: S3-compatible servers differ in which
		// flexible checksums they accept, and the payload is signed anyway.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	var client *awss3.Client
	if cfg.AccessKey != "" {
		client = awss3.New(awss3.Options{
			Region:      cfg.Region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		}, opt)
	} else {
		ac, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
		if err != nil {
			return nil, fmt.Errorf("s3 capture: loading AWS configuration: %w", err)
		}
		client = awss3.NewFromConfig(ac, opt)
	}
	wctx, cancel := context.WithCancel(context.Background())
	return &Writer{cfg: cfg, client: client, transport: tr, sem: make(chan struct{}, cfg.MaxInflight), ctx: wctx, cancel: cancel}, nil
}

// Client is the underlying SDK client (for listing and reading back what was written).
func (w *Writer) Client() *awss3.Client { return w.client }

// Bucket is the configured bucket.
func (w *Writer) Bucket() string { return w.cfg.Bucket }

// Staged is the number of bytes copied and not yet uploaded.
func (w *Writer) Staged() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.staged
}

// PacketKey is the key of packet i of burst seq: <prefix>_<seq>_<i>.
func PacketKey(prefix string, seq uint64, i int) string {
	return fmt.Sprintf("%s_%08d_%05d", prefix, seq, i)
}

// BurstKey is the key of burst seq's object: <prefix>_<seq>.dqb.
func BurstKey(prefix string, seq uint64) string { return fmt.Sprintf("%s_%08d.dqb", prefix, seq) }

// object is one staged upload.
type object struct {
	key  string
	data []byte
	meta map[string]string
}

// WritePackets stages every packet of b (minus its first offset bytes, the skip spanning
// segments) as one object each, keyed PacketKey(prefix, seq, i), and starts uploading.
// seq is this writer's burst sequence number (Upload.Seq).
func (w *Writer) WritePackets(b *engine.Burst, prefix string, offset int) (*Upload, error) {
	return w.write(b, prefix, offset, false)
}

// WriteBurst stages b as a single object keyed BurstKey(prefix, seq), holding an index of
// packet lengths and RX timestamps followed by the packets (EncodeBurst), and starts
// uploading it.
func (w *Writer) WriteBurst(b *engine.Burst, prefix string, offset int) (*Upload, error) {
	return w.write(b, prefix, offset, true)
}

func (w *Writer) write(b *engine.Burst, prefix string, offset int, whole bool) (*Upload, error) {
	if b == nil {
		return nil, fmt.Errorf("s3 capture: nil burst: %w", engine.ErrNullPtr)
	}
	if prefix == "" {
		return nil, fmt.Errorf("s3 capture: empty object prefix: %w", engine.ErrInvalidParameter)
	}
	if offset < 0 {
		return nil, fmt.Errorf("s3 capture: negative packet data offset %d: %w", offset, engine.ErrInvalidParameter)
	}
	// Sizes first, so nothing is copied for a write that will be refused.
	sizes := make([]int, b.Len())
	var sum int64
	for i := range sizes {
		sizes[i] = max(b.PacketLen(i)-offset, 0)
		sum += int64(sizes[i])
		if !whole && sizes[i] > MaxObjectSize {
			return nil, fmt.Errorf("s3 capture: packet %d is %d bytes, over S3's %d-byte single-PUT limit: %w", i, sizes[i], MaxObjectSize, engine.ErrNotSupported)
		}
	}
	if whole {
		sum += int64(burstHeaderLen + burstEntryLen*b.Len())
		if sum > MaxObjectSize {
			return nil, fmt.Errorf("s3 capture: burst object of %d bytes is over S3's %d-byte single-PUT limit: %w", sum, MaxObjectSize, engine.ErrNotSupported)
		}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, capture.ErrClosed
	}
	if w.staged+sum > w.cfg.MaxStagedBytes {
		staged := w.staged
		w.mu.Unlock()
		return nil, fmt.Errorf("s3 capture: %d bytes to stage with %d already staged exceeds the %d-byte limit: %w", sum, staged, w.cfg.MaxStagedBytes, engine.ErrNoSpaceAvailable)
	}
	w.staged += sum
	seq := w.seq
	w.seq++
	w.wg.Add(1)
	w.mu.Unlock()

	objs, err := w.stage(b, prefix, offset, whole, seq, sizes, sum)
	if err != nil {
		w.release(sum)
		w.wg.Done()
		return nil, err
	}
	u := &Upload{seq: seq, done: make(chan struct{}), objects: make([]ObjectStatus, len(objs))}
	for i, o := range objs {
		u.objects[i] = ObjectStatus{Key: o.key, Size: len(o.data)}
	}
	go func() {
		defer w.wg.Done()
		w.run(u, objs)
	}()
	return u, nil
}

// stage copies the bytes into one allocation and cuts it into objects.
func (w *Writer) stage(b *engine.Burst, prefix string, offset int, whole bool, seq uint64, sizes []int, sum int64) ([]object, error) {
	buf := make([]byte, sum)
	at := 0
	if whole {
		at = encodeIndex(buf, b, sizes)
	}
	var objs []object
	for i := range sizes {
		if err := copyPacket(buf[at:at+sizes[i]], b, i, offset, w.cfg.Device); err != nil {
			return nil, fmt.Errorf("s3 capture: packet %d: %w", i, err)
		}
		if !whole {
			objs = append(objs, object{key: PacketKey(prefix, seq, i), data: buf[at : at+sizes[i] : at+sizes[i]]})
		}
		at += sizes[i]
	}
	if whole {
		objs = []object{{key: BurstKey(prefix, seq), data: buf, meta: map[string]string{"daqiri-packets": fmt.Sprint(b.Len())}}}
	}
	return objs, nil
}

// copyPacket copies packet i's logical bytes after offset into dst (len(dst) of them).
func copyPacket(dst []byte, b *engine.Burst, i, offset int, dev capture.DeviceIO) error {
	skip := offset
	at := 0
	for s := 0; s < b.NumSegments() && at < len(dst); s++ {
		l := b.SegmentLen(s, i)
		if skip >= l {
			skip -= l
			continue
		}
		n := l - skip
		if seg := b.Segment(s, i); seg != nil {
			copy(dst[at:at+n], seg[skip:])
		} else {
			if dev == nil {
				return fmt.Errorf("segment %d is in device memory and no DeviceIO (capture/gds) was configured: %w", s, engine.ErrNotSupported)
			}
			if err := dev.CopyToHost(dst[at:at+n], b.SegmentAddr(s, i)+uintptr(skip)); err != nil {
				return fmt.Errorf("copying segment %d from device memory: %w", s, err)
			}
		}
		at += n
		skip = 0
	}
	return nil
}

func (w *Writer) release(n int64) {
	w.mu.Lock()
	w.staged -= n
	w.mu.Unlock()
}

// run uploads the objects, at most MaxInflight at a time across the writer.
func (w *Writer) run(u *Upload, objs []object) {
	var wg sync.WaitGroup
	for i := range objs {
		select {
		case w.sem <- struct{}{}:
		case <-w.ctx.Done():
			// Aborted by Close: the remaining objects fail without being tried.
			for j := i; j < len(objs); j++ {
				u.set(j, 0, fmt.Errorf("s3 capture: %s not uploaded: %w", objs[j].key, context.Canceled))
				w.release(int64(len(objs[j].data)))
			}
			wg.Wait()
			u.finish()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-w.sem }()
			attempts, err := w.put(objs[i])
			u.set(i, attempts, err)
			w.release(int64(len(objs[i].data)))
		}()
	}
	wg.Wait()
	u.finish()
}

// put uploads one object, retrying with backoff while the error is worth retrying.
func (w *Writer) put(o object) (int, error) {
	backoff := w.cfg.RetryBackoff
	var err error
	for attempt := 1; attempt <= w.cfg.MaxAttempts; attempt++ {
		ctx, cancel := context.WithTimeout(w.ctx, w.cfg.AttemptTimeout)
		_, err = w.client.PutObject(ctx, &awss3.PutObjectInput{
			Bucket:        aws.String(w.cfg.Bucket),
			Key:           aws.String(o.key),
			Body:          bytes.NewReader(o.data),
			ContentLength: aws.Int64(int64(len(o.data))),
			ContentType:   aws.String("application/octet-stream"),
			Metadata:      o.meta,
		})
		cancel()
		if err == nil {
			return attempt, nil
		}
		if w.ctx.Err() != nil || !retryable(err) || attempt == w.cfg.MaxAttempts {
			return attempt, fmt.Errorf("s3 capture: PUT %s (attempt %d of %d): %w", o.key, attempt, w.cfg.MaxAttempts, err)
		}
		d := backoff + time.Duration(rand.Int64N(int64(backoff)/2+1))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return attempt, fmt.Errorf("s3 capture: PUT %s aborted after %d attempts: %w", o.key, attempt, err)
		}
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
	return w.cfg.MaxAttempts, err
}

// retryable tells transient failures (network errors, timeouts, 5xx, 408, 429) from ones a
// retry cannot fix (other 4xx: no such bucket, access denied, bad request).
func retryable(err error) bool {
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		// 0: no response at all (the request could not be sent or timed out).
		c := st.HTTPStatusCode()
		return c == 0 || c >= 500 || c == http.StatusRequestTimeout || c == http.StatusTooManyRequests
	}
	return true
}

// Close stops accepting writes and waits for uploads in flight. If ctx ends first, the
// uploads still running are aborted (their objects fail with context.Canceled) and Close
// waits for them to stop, which takes no longer than the network calls need to notice. It
// then drops idle connections. Idempotent.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("s3 capture: close: uploads aborted: %w", ctx.Err())
		w.cancel()
		<-done
	}
	w.cancel()
	w.transport.CloseIdleConnections()
	return err
}

// ObjectStatus is the outcome of one object (per-object status).
type ObjectStatus struct {
	Key      string
	Size     int
	Attempts int   // PUTs tried
	Done     bool  // finished, successfully or not
	Err      error // nil when uploaded
}

// Upload is one write's objects being uploaded (upstream S3WriteHandle). Its methods are
// safe for concurrent use; it holds no reference to the burst.
type Upload struct {
	seq     uint64
	done    chan struct{}
	mu      sync.Mutex
	objects []ObjectStatus
}

func (u *Upload) set(i, attempts int, err error) {
	u.mu.Lock()
	u.objects[i].Attempts, u.objects[i].Err, u.objects[i].Done = attempts, err, true
	u.mu.Unlock()
}

func (u *Upload) finish() { close(u.done) }

// Seq is the burst sequence number in the keys.
func (u *Upload) Seq() uint64 { return u.seq }

// Done is closed when every object has finished.
func (u *Upload) Done() <-chan struct{} { return u.done }

// Objects is a snapshot of every object's status.
func (u *Upload) Objects() []ObjectStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]ObjectStatus(nil), u.objects...)
}

// status counts objects; err is the first failure, wrapped, once all are done.
func (u *Upload) status() (capture.Status, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var st capture.Status
	var first error
	for _, o := range u.objects {
		if !o.Done {
			continue
		}
		if o.Err != nil {
			st.Failed++
			if first == nil {
				first = o.Err
			}
		} else {
			st.Completed++
			st.Bytes += int64(o.Size)
		}
	}
	if first != nil {
		first = fmt.Errorf("%d of %d objects not uploaded; first: %w (%w)", st.Failed, len(u.objects), first, engine.ErrGenericFailure)
	}
	return st, first
}

// Poll reports progress without blocking: engine.ErrNotReady while objects are in flight,
// then the final status and error (nil when every object was uploaded).
func (u *Upload) Poll() (capture.Status, error) {
	select {
	case <-u.done:
		return u.status()
	default:
		st, _ := u.status()
		return st, engine.ErrNotReady
	}
}

// Wait blocks until every object has finished or ctx ends (then the error is ctx's and the
// uploads go on).
func (u *Upload) Wait(ctx context.Context) (capture.Status, error) {
	select {
	case <-u.done:
		return u.status()
	case <-ctx.Done():
		st, _ := u.status()
		return st, ctx.Err()
	}
}

// Close waits for the upload to finish and returns its error. Idempotent.
func (u *Upload) Close() error {
	<-u.done
	_, err := u.status()
	return err
}
