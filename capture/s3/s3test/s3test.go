// Package s3test runs a real S3-compatible server for tests: versitygw (the Versity S3
// Gateway) with its posix backend, serving a temporary directory on a loopback port. The
// server is the module's tool dependency (go.mod `tool` directive), built and cached by
// `go tool -n versitygw`, so tests need the go command and the module cache (CI's `go mod
// download` fills it); without the go command they skip.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one running versitygw.
type Server struct {
	Endpoint  string // http://127.0.0.1:<port>
	Addr      string // 127.0.0.1:<port>
	AccessKey string
	SecretKey string
	Region    string
	Dir       string // the posix backend's root: one subdirectory per bucket

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	once sync.Once
}

// binary builds versitygw once per test process and returns its path in the build cache.
var binary = sync.OnceValues(func() (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %w", err)
	}
	cmd := exec.Command(goCmd, "tool", "-n", "versitygw")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n versitygw: %v: %s", err, stderr.String())
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("go tool -n versitygw printed %q: %w", path, err)
	}
	return path, nil
})

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Start runs a server on a free loopback port with fresh random credentials and waits until
// it answers HTTP. The test's cleanup stops it. Skips (fails under CI) when versitygw cannot
// be built here.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		testutil.Missing(t, "S3 test server unavailable: %v", err)
	}
	s := &Server{AccessKey: "AK" + randHex(8), SecretKey: randHex(20), Region: "us-east-1", Dir: t.TempDir(), done: make(chan struct{})}
	// A free port: bind, note it, close. Another process could take it in between; the
	// health check below then fails clearly rather than talking to a stranger, because the
	// credentials are random.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	l.Close()
	s.Endpoint = "http://" + s.Addr
	s.out = &syncBuffer{}
	s.cmd = exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region,
		"--port", s.Addr, "--quiet", "posix", s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// Its own process group, so nothing it starts outlives Stop.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for i := 0; ; i++ {
		select {
		case <-s.done:
			t.Fatalf("versitygw exited at start: %s", s.out)
		default:
		}
		resp, err := client.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			// Any S3 answer (403 for an unsigned request) means it is serving.
			return s
		}
		if i > 300 {
			t.Fatalf("versitygw did not answer on %s: %v\n%s", s.Addr, err, s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would: SIGKILL, no shutdown) and waits for it to exit.
// Idempotent.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-s.done
	})
}

// Stopped is closed once the server process has exited.
func (s *Server) Stopped() <-chan struct{} { return s.done }

// CreateBucket makes a bucket by creating its directory in the posix backend's root, which
// is how that backend defines buckets.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Output is what the server printed so far (for failure messages).
func (s *Server) Output() string { return s.out.String() }

// Wait blocks until ctx ends or the server exits.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// syncBuffer collects the server's output; exec copies into it from its own goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
