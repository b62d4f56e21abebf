package s3

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/daqiri-go/daqiri/engine"
)

// A burst object (WriteBurst) is, all integers little-endian:
//
//	header  16 bytes: magic "DQRBURST", version uint16 (1), flags uint16 (0), count uint32
//	index   count × 16 bytes: length uint32, reserved uint32 (0), RX timestamp int64 (ns since
//	        the Unix epoch, 0 when the engine gave none)
//	data    the packets' bytes, concatenated in order
//
// The index comes first so a reader can split the object while streaming it.
const (
	burstMagic     = "DQRBURST"
	burstVersion   = 1
	burstHeaderLen = 16
	burstEntryLen  = 16
)

// encodeIndex writes the header and index for b's packets with the given sizes into buf and
// returns how many bytes that took.
func encodeIndex(buf []byte, b *engine.Burst, sizes []int) int {
	copy(buf, burstMagic)
	binary.LittleEndian.PutUint16(buf[8:], burstVersion)
	binary.LittleEndian.PutUint16(buf[10:], 0)
	binary.LittleEndian.PutUint32(buf[12:], uint32(len(sizes)))
	at := burstHeaderLen
	for i, n := range sizes {
		e := buf[at : at+burstEntryLen]
		binary.LittleEndian.PutUint32(e[0:], uint32(n))
		binary.LittleEndian.PutUint32(e[4:], 0)
		ts, err := b.RxTimestamp(i)
		if err != nil {
			ts = 0
		}
		binary.LittleEndian.PutUint64(e[8:], uint64(ts))
		at += burstEntryLen
	}
	return at
}

// BurstPacket is one packet of a decoded burst object.
type BurstPacket struct {
	Data        []byte // a slice of the object's bytes
	RxTimestamp int64  // ns since the Unix epoch; 0 when none was recorded
}

// DecodeBurst splits a burst object (see WriteBurst) into its packets. It checks the magic,
// version and that the index and data add up to the object's size.
func DecodeBurst(obj []byte) ([]BurstPacket, error) {
	if len(obj) < burstHeaderLen || string(obj[:8]) != burstMagic {
		return nil, errors.New("s3 capture: not a daqiri burst object (no DQRBURST header)")
	}
	if v := binary.LittleEndian.Uint16(obj[8:]); v != burstVersion {
		return nil, fmt.Errorf("s3 capture: burst object version %d, want %d", v, burstVersion)
	}
	n := int(binary.LittleEndian.Uint32(obj[12:]))
	if n > (len(obj)-burstHeaderLen)/burstEntryLen {
		return nil, fmt.Errorf("s3 capture: burst object claims %d packets but holds %d bytes", n, len(obj))
	}
	data := burstHeaderLen + n*burstEntryLen
	out := make([]BurstPacket, n)
	at := data
	for i := range out {
		e := obj[burstHeaderLen+i*burstEntryLen:]
		l := int(binary.LittleEndian.Uint32(e[0:]))
		if l > len(obj)-at {
			return nil, fmt.Errorf("s3 capture: burst object packet %d (%d bytes) runs past the end", i, l)
		}
		out[i] = BurstPacket{Data: obj[at : at+l : at+l], RxTimestamp: int64(binary.LittleEndian.Uint64(e[8:]))}
		at += l
	}
	if at != len(obj) {
		return nil, fmt.Errorf("s3 capture: burst object has %d bytes after its last packet", len(obj)-at)
	}
	return out, nil
}
