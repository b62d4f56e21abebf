package roce

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The engine's own connect protocol. Two daqiri peers recognise each other
// by a short tag in the connection request's and reply's private data; then
// each sends the other, as the first message on the new connection, a table
// of the memory regions it lets the peer read or write (name, address,
// length, rkey), so that RDMA WRITE and READ can name remote memory by
// region name. A peer whose private data lacks the tag (rping, perftest)
// gets no table and is sent none: the connection then carries only what the
// application sends, and remote memory is named by address and rkey.
//
// The table is big-endian, for peers of any byte order.

// privTag opens the private data of both the request and the reply; the
// byte after it is the protocol version.
var privTag = []byte("DQRI")

const (
	privVersion = 1
	privLen     = 6 // tag, version, flags

	tableMagic    = "DQRIMRT1"
	tableHdrLen   = 16 // magic, count u16, 6 reserved bytes
	tableEntryLen = 56 // name[32], addr u64, length u64, rkey u32, access u32
	nameLen       = 32 // upstream's local_mr_name[32]
	// MaxAdvertised is how many memory regions one side advertises
	// (upstream exchanges at most 16).
	MaxAdvertised = 16
	tableMaxLen   = tableHdrLen + MaxAdvertised*tableEntryLen

	accessBitWrite = 1
	accessBitRead  = 2
)

// privateData is what this engine puts in a connect request or reply.
func privateData() []byte {
	b := make([]byte, privLen)
	copy(b, privTag)
	b[4] = privVersion
	return b
}

// speaksTable reports whether a peer's private data carries the tag.
// Private data arrives zero-padded, so only the prefix is looked at.
func speaksTable(pd []byte) bool {
	return len(pd) >= privLen && bytes.Equal(pd[:4], privTag) && pd[4] == privVersion
}

// encodeTable writes the advertised regions into b and returns the length.
func encodeTable(b []byte, mrs []LocalMR) (int, error) {
	if len(mrs) > MaxAdvertised {
		return 0, fmt.Errorf("roce: %d memory regions with remote access; at most %d can be advertised", len(mrs), MaxAdvertised)
	}
	n := tableHdrLen + len(mrs)*tableEntryLen
	if len(b) < n {
		return 0, fmt.Errorf("roce: region table of %d bytes does not fit %d", n, len(b))
	}
	clear(b[:n])
	copy(b, tableMagic)
	binary.BigEndian.PutUint16(b[8:], uint16(len(mrs)))
	for i, m := range mrs {
		if len(m.Name) > nameLen {
			return 0, fmt.Errorf("roce: memory region name %q is longer than %d bytes", m.Name, nameLen)
		}
		o := tableHdrLen + i*tableEntryLen
		copy(b[o:o+nameLen], m.Name)
		binary.BigEndian.PutUint64(b[o+32:], m.Addr)
		binary.BigEndian.PutUint64(b[o+40:], m.Length)
		binary.BigEndian.PutUint32(b[o+48:], m.RKey)
		var acc uint32
		if m.RemoteWrite {
			acc |= accessBitWrite
		}
		if m.RemoteRead {
			acc |= accessBitRead
		}
		binary.BigEndian.PutUint32(b[o+52:], acc)
	}
	return n, nil
}

// decodeTable parses a peer's table, refusing anything malformed (it comes
// from the network).
func decodeTable(b []byte) ([]RemoteMR, error) {
	if len(b) < tableHdrLen || string(b[:8]) != tableMagic {
		return nil, fmt.Errorf("roce: the peer's first message (%d bytes) is not a region table", len(b))
	}
	n := int(binary.BigEndian.Uint16(b[8:]))
	if n > MaxAdvertised || len(b) < tableHdrLen+n*tableEntryLen {
		return nil, fmt.Errorf("roce: the peer's region table claims %d entries in %d bytes", n, len(b))
	}
	out := make([]RemoteMR, n)
	seen := map[string]bool{}
	for i := range out {
		o := tableHdrLen + i*tableEntryLen
		name := string(bytes.TrimRight(b[o:o+nameLen], "\x00"))
		if name == "" || seen[name] {
			return nil, fmt.Errorf("roce: the peer's region table has an empty or duplicate name at entry %d", i)
		}
		seen[name] = true
		acc := binary.BigEndian.Uint32(b[o+52:])
		out[i] = RemoteMR{Name: name, Addr: binary.BigEndian.Uint64(b[o+32:]), Length: binary.BigEndian.Uint64(b[o+40:]),
			RKey: binary.BigEndian.Uint32(b[o+48:]), RemoteWrite: acc&accessBitWrite != 0, RemoteRead: acc&accessBitRead != 0}
		if out[i].Addr+out[i].Length < out[i].Addr {
			return nil, fmt.Errorf("roce: the peer's region %s wraps the address space", name)
		}
	}
	return out, nil
}
