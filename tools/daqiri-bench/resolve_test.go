package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestBenchTxResolvesDestinationMAC (issue 32 item 4): a bench_tx entry without eth_dst_addr
// on a raw port gets the next hop of its ip_dst_addr as the frames' destination MAC, as
// upstream's bench does (resolve_ipv4_mac once before sending); a destination nobody answers
// for fails naming the address; a placeholder eth_dst_addr is still taken as written.
func TestBenchTxResolvesDestinationMAC(t *testing.T) {
	p := netns.NewPairWith(t, netns.PairOptions{ARP: true})
	cfg, err := config.Load(fmt.Sprintf(`
version: 1
stream_type: raw
log_level: error
memory_regions:
- {name: tx0, kind: host, affinity: 0, num_bufs: 64, buf_size: 2048}
interfaces:
- name: tx_port
  address: %s
  tx:
    queues:
    - {name: t0, id: 0, cpu_core: 0, batch_size: 8, memory_regions: [tx0]}
`, p.VethA))
	if err != nil {
		t.Fatal(err)
	}
	b4 := p.AddrB.As4()
	nobody := netip.AddrFrom4([4]byte{b4[0], b4[1], b4[2], 99})
	err = p.A.Do(func() error {
		s, err := daqiri.Open(t.Context(), cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		h, err := headerTemplate(&benchTx{IPDst: p.AddrB.String(), IPSrc: p.AddrA.String()}, 64, s, 0)
		if err != nil {
			return err
		}
		if !bytes.Equal(h[0:6], p.MACB) || !bytes.Equal(h[6:12], p.MACA) {
			t.Errorf("header dst %x src %x, want the resolved peer %v from %v", h[0:6], h[6:12], p.MACB, p.MACA)
		}
		h, err = headerTemplate(&benchTx{EthDst: "<00:00:00:00:00:00>", IPDst: p.AddrB.String()}, 64, s, 0)
		if err != nil || !bytes.Equal(h[0:6], make([]byte, 6)) {
			t.Errorf("placeholder eth_dst_addr: % x %v, want zeros as written", h[0:6], err)
		}
		if _, err := headerTemplate(&benchTx{IPDst: "<0.0.0.0>"}, 64, s, 0); err == nil || !strings.Contains(err.Error(), "ip_dst_addr") {
			t.Errorf("no eth_dst_addr and no ip_dst_addr: %v", err)
		}
		// The kernel gives up after three requests a second apart: resolveTimeout's 3 s.
		_, err = headerTemplate(&benchTx{IPDst: nobody.String()}, 64, s, 0)
		if err == nil || !strings.Contains(err.Error(), "eth_dst_addr is absent") || !strings.Contains(err.Error(), nobody.String()) {
			t.Errorf("unanswered %v: %v, want an error naming the address", nobody, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
