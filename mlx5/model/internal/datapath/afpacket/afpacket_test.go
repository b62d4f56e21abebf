package afpacket

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestBurstWhileNotReading: a peer sends a burst of full-size frames while the bridge is not
// reading (a descheduled model process); every frame is there when it reads again and the
// kernel counted no drop. With the default receive buffer (about 60 such frames) the CI run
// of the mlx5 conformance test lost the tail of a 256-frame burst this way.
func TestBurstWhileNotReading(t *testing.T) {
	netns.Require(t)
	pair := netns.NewPairWith(t, netns.PairOptions{MTU: 1500})
	var rx, tx *Socket
	if err := pair.A.Do(func() (err error) { rx, err = Open(pair.VethA); return }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := pair.B.Do(func() (err error) { tx, err = Open(pair.VethB); return }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if _, err := rx.Drops(); err != nil { // reset the count of what arrived before the test
		t.Fatal(err)
	}

	const frames = 2000
	frame := make([]byte, 1514)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0x0a, 0x02, 0, 0, 0, 0, 0x0b}) // locally administered MACs
	binary.BigEndian.PutUint16(frame[12:], 0x88b5)                      // IEEE local experimental EtherType
	for i := range frames {
		binary.BigEndian.PutUint32(frame[14:], uint32(i))
		if err := tx.Send(frame); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	buf := make([]byte, 1<<16)
	got := 0
	next := uint32(0)
	deadline := time.Now().Add(10 * time.Second)
	for got < frames && time.Now().Before(deadline) {
		n, err := rx.Recv(buf, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if n != len(frame) || binary.BigEndian.Uint16(buf[12:]) != 0x88b5 {
			continue // something of the kernel's own (IPv6 neighbour discovery)
		}
		if seq := binary.BigEndian.Uint32(buf[14:]); seq != next {
			t.Fatalf("frame %d arrived where %d was due", seq, next)
		}
		next++
		got++
	}
	drops, err := rx.Drops()
	if err != nil {
		t.Fatal(err)
	}
	if got != frames || drops != 0 {
		t.Fatalf("received %d of %d frames, the kernel dropped %d for the socket", got, frames, drops)
	}
}
