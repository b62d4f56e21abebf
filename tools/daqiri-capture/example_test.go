package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestExampleConfig (issue 19 item 17): the shipped example configuration captures what is
// sent to it (on a free port instead of 5005, so that tests do not collide).
func TestExampleConfig(t *testing.T) {
	ex, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "example.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(string(ex), "udp://127.0.0.1:5005", "udp://127.0.0.1:"+strconv.Itoa(port), 1)), 0o644)
	pcapPath, ngPath := filepath.Join(dir, "out.pcap"), filepath.Join(dir, "out.pcapng")
	const n = 20
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(context.Background(), []string{"--config", cfg, "--pcap", pcapPath, "--pcapng", ngPath, "--count", strconv.Itoa(n), "--duration", "20s", "--quiet"}, &out, &errb)
	}()
	conn, err := net.Dial("udp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Datagrams sent before the server is up are lost: send until it has them all.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		select {
		case rc := <-done:
			if rc != 0 {
				t.Fatalf("rc %d: %s", rc, errb.String())
			}
			if got := pcapRecords(pcapPath); got < n {
				t.Fatalf("%d records, want at least %d", got, n)
			}
			// The same packets in the pcapng file (read with gopacket's pcapng reader).
			f, err := os.Open(ngPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for ; k < 1e6; k++ {
				data, _, err := ng.ReadPacketData()
				if err != nil {
					break
				}
				if string(data) != "hello" {
					t.Fatalf("pcapng packet %d: %q", k, data)
				}
			}
			if k != pcapRecords(pcapPath) || !strings.Contains(out.String(), "pcapng") {
				t.Fatalf("pcapng has %d packets, pcap %d; summary:\n%s", k, pcapRecords(pcapPath), out.String())
			}
			return
		default:
		}
		conn.Write([]byte("hello"))
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("capture did not finish: %s", errb.String())
}
