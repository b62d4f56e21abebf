package daqiri_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
)

// The RDMA helpers on a session without RoCE interfaces (and with bad
// arguments) fail cleanly; the RoCE engine itself is tested in the VM
// (roce/*_guest_test.go).
func TestRDMAOnSocketSession(t *testing.T) {
	s := mustOpen(t, pairConfig(config.ProtoUDP, testutil.FreePort(t, "udp"), 2048, 4, 0))
	for name, err := range map[string]error{
		"RDMAConnect":           second(s.RDMAConnect(1, netip.MustParseAddrPort("127.0.0.1:1"), time.Second)),
		"RDMAServerConn":        second(s.RDMAServerConn(0)),
		"RDMALocalMRs":          second(s.RDMALocalMRs(0)),
		"RDMARemoteMRs":         second(s.RDMARemoteMRs(1)),
		"RDMAConnErr":           s.RDMAConnErr(1),
		"RDMAConnect(bad port)": second(s.RDMAConnect(7, netip.MustParseAddrPort("127.0.0.1:1"), time.Second)),
	} {
		if !errors.Is(err, daqiri.ErrInvalidParameter) {
			t.Errorf("%s on a socket session: %v, want ErrInvalidParameter", name, err)
		}
	}
	if _, _, err := s.RDMADrops(0); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("RDMADrops: %v", err)
	}
	b, err := s.TxBurst(1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if err := s.RDMASetHeader(b, daqiri.RDMAHeader{Op: daqiri.RDMAWrite}); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("RDMASetHeader on a UDP burst: %v", err)
	}
	if _, _, err := s.RDMARemoteKey(b, 0, 0); !errors.Is(err, daqiri.ErrInvalidParameter) {
		t.Errorf("RDMARemoteKey on a UDP burst: %v", err)
	}
	// Nil and non-RDMA bursts are handled.
	if daqiri.RDMAOp(nil) != daqiri.RDMAInvalid || daqiri.RDMACompletionOf(nil) != nil || daqiri.RDMACompletionOf(b) != nil {
		t.Error("nil and non-RDMA bursts")
	}
	if err := s.RDMASetHeader(nil, daqiri.RDMAHeader{}); !errors.Is(err, daqiri.ErrNullPtr) {
		t.Errorf("RDMASetHeader(nil): %v", err)
	}
	if _, _, err := s.RDMARemoteKey(nil, 0, 0); !errors.Is(err, daqiri.ErrNullPtr) {
		t.Errorf("RDMARemoteKey(nil): %v", err)
	}
	if !errors.Is(daqiri.ErrDisconnected, daqiri.ErrConnectFailure) || !errors.Is(daqiri.ErrNoDMABuf, daqiri.ErrNotSupported) {
		t.Error("RDMA errors do not match their statuses")
	}
}

func second[T any](_ T, err error) error { return err }
