package rdmacm

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// The ucma write() ABI, version 4 (include/uapi/rdma/rdma_user_cm.h,
// RDMA_USER_CM_ABI_VERSION). Every command is one write() of a header
// {cmd u32, in u16, out u16} followed by `in` bytes of the command's struct;
// a command with a reply carries the address of an `out`-byte buffer as its
// first field (__aligned_u64 response) and the kernel copies the reply there
// (drivers/infiniband/core/ucma.c, ucma_write and the per-command handlers).
// The structs are laid out here by hand, field by field at the offsets the
// header's natural alignment gives; abi_test.go checks each size.
const abiVersion = 4

// Command numbers: the order of the anonymous RDMA_USER_CM_CMD_* enum.
const (
	cmdCreateID     = 0
	cmdDestroyID    = 1
	cmdBindIP       = 2 // legacy sockaddr_in6-only bind, unused
	cmdResolveIP    = 3 // legacy, unused
	cmdResolveRoute = 4
	cmdQueryRoute   = 5
	cmdConnect      = 6
	cmdListen       = 7
	cmdAccept       = 8
	cmdReject       = 9
	cmdDisconnect   = 10
	cmdInitQPAttr   = 11
	cmdGetEvent     = 12
	cmdGetOption    = 13
	cmdSetOption    = 14
	cmdNotify       = 15
	cmdQuery        = 19
	cmdBind         = 20
	cmdResolveAddr  = 21
)

// Query options of RDMA_USER_CM_CMD_QUERY (RDMA_USER_CM_QUERY_*).
const (
	queryAddr = 0
	queryPath = 1
	queryGID  = 2
)

// Struct sizes (bytes) of the command structs, without the header, and of
// the replies.
const (
	sizeofHdr            = 8
	sizeofSockaddrIn     = 16  // struct sockaddr_in
	sizeofSockaddrIn6    = 28  // struct sockaddr_in6
	sizeofSockaddrStore  = 128 // struct sockaddr_storage
	sizeofCreateID       = 24  // uid, response, ps, qp_type, reserved[5]
	sizeofCreateIDResp   = 4   // id
	sizeofDestroyID      = 16  // response, id, reserved
	sizeofDestroyIDResp  = 4   // events_reported
	sizeofBind           = 8 + sizeofSockaddrStore
	sizeofResolveAddr    = 16 + 2*sizeofSockaddrStore
	sizeofResolveRoute   = 8
	sizeofQuery          = 16 // response, id, option
	sizeofQueryAddrResp  = 16 + 2*sizeofSockaddrStore + 8
	sizeofConnParam      = 8 + MaxPrivateData + 8 // struct rdma_ucm_conn_param
	sizeofUDParam        = 8 + 32 + MaxPrivateData + 8
	sizeofECE            = 8
	sizeofConnect        = sizeofConnParam + 8 + sizeofECE
	sizeofListen         = 8
	sizeofAccept         = 8 + sizeofConnParam + 8 + sizeofECE
	sizeofReject         = 8 + MaxPrivateData
	sizeofDisconnect     = 4
	sizeofInitQPAttr     = 16 // response, id, qp_state
	sizeofKernelQPAttr   = 144
	sizeofGetEvent       = 8
	sizeofEventResp      = 20 + sizeofUDParam + 4 + sizeofECE // 336: the union is as large as ud_param
	sizeofSetOption      = 24
	offsetEventParam     = 20
	offsetEventECE       = offsetEventParam + sizeofUDParam + 4
	offsetConnParamValid = 8 + MaxPrivateData + 7
)

// MaxPrivateData is RDMA_MAX_PRIVATE_DATA, the size of the private-data
// arrays in the ABI. What a peer actually receives is smaller and depends on
// the message: on RoCE the IB CM carries 92 bytes in a REQ, of which rdma_cm's
// own header takes 36 for the TCP and IB port spaces (so 56 are left to the
// user), 196 in a REP, 148 in a REJ (drivers/infiniband/core/cma.c,
// cma_user_data_offset; IB CM message sizes in include/rdma/ib_cm.h).
const MaxPrivateData = 256

// Private-data limits for a connection made through the IB CM (RoCE, IB), as
// the peer sees them.
const (
	MaxConnectPrivateData = 56  // REQ: 92 bytes minus rdma_cm's 36-byte header
	MaxAcceptPrivateData  = 196 // REP
	MaxRejectPrivateData  = 148 // REJ
)

// Option levels and names of SET_OPTION (RDMA_OPTION_*).
const (
	optionLevelID      = 0
	optionIDTOS        = 0
	optionIDReuseAddr  = 1
	optionIDAFOnly     = 2
	optionIDAckTimeout = 3
)

var ne = binary.NativeEndian

// encodeSockaddr writes a as struct sockaddr_in (IPv4, and IPv4-mapped IPv6)
// or struct sockaddr_in6 into b and returns its length. sa_family is in host
// order, the port in network order.
func encodeSockaddr(b []byte, a netip.AddrPort) int {
	ip := a.Addr().Unmap()
	if ip.Is4() {
		ne.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], a.Port())
		v := ip.As4()
		copy(b[4:8], v[:])
		return sizeofSockaddrIn
	}
	ne.PutUint16(b[0:], unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	v := ip.As16()
	copy(b[8:24], v[:])
	return sizeofSockaddrIn6
}

// decodeSockaddr reads a struct sockaddr_in or sockaddr_in6; other families
// decode to the zero AddrPort.
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch ne.Uint16(b[0:]) {
	case unix.AF_INET:
		if len(b) < sizeofSockaddrIn {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:]))
	case unix.AF_INET6:
		if len(b) < sizeofSockaddrIn6 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), binary.BigEndian.Uint16(b[2:]))
	}
	return netip.AddrPort{}
}

// ConnParam is struct rdma_ucm_conn_param: what a connect or accept offers and
// what a connection event reports of the peer's offer.
type ConnParam struct {
	// PrivateData travels with the connection request or reply (see
	// MaxConnectPrivateData and MaxAcceptPrivateData). In events it holds
	// what the kernel delivered, zero-padded to the message's private-data
	// size: a protocol carried in it must encode its own length.
	PrivateData []byte
	// ResponderResources is how many RDMA READ / atomic requests the sender
	// of this parameter accepts in flight as a responder; InitiatorDepth how
	// many it issues. Both 0 for UC and for SEND/WRITE-only RC connections.
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        bool
	// RetryCount (0..7) is how often a request is resent when no ACK comes;
	// RNRRetryCount (0..7, 7 = forever) how often after a receiver-not-ready
	// NAK.
	RetryCount    uint8
	RNRRetryCount uint8
	SRQ           bool
	// QPNum is the local QP the connection binds (connect, accept) or the
	// peer's QP (events).
	QPNum uint32
	QKey  uint32
}

// encode writes p as a conn_param at b[0:sizeofConnParam] with valid = 1
// (ucma_connect refuses a conn_param whose valid byte is 0).
func (p *ConnParam) encode(b []byte, max int) error {
	if len(p.PrivateData) > max {
		return fmt.Errorf("rdmacm: %d bytes of private data, at most %d fit", len(p.PrivateData), max)
	}
	if p.RetryCount > 7 || p.RNRRetryCount > 7 {
		return fmt.Errorf("rdmacm: retry count %d / RNR retry count %d out of range 0..7", p.RetryCount, p.RNRRetryCount)
	}
	ne.PutUint32(b[0:], p.QPNum)
	ne.PutUint32(b[4:], p.QKey)
	copy(b[8:8+MaxPrivateData], p.PrivateData)
	o := 8 + MaxPrivateData
	b[o] = uint8(len(p.PrivateData))
	b[o+1] = boolByte(p.SRQ)
	b[o+2] = p.ResponderResources
	b[o+3] = p.InitiatorDepth
	b[o+4] = boolByte(p.FlowControl)
	b[o+5] = p.RetryCount
	b[o+6] = p.RNRRetryCount
	b[o+7] = 1 // valid
	return nil
}

func decodeConnParam(b []byte) ConnParam {
	o := 8 + MaxPrivateData
	n := int(b[o])
	p := ConnParam{
		QPNum: ne.Uint32(b[0:]), QKey: ne.Uint32(b[4:]),
		SRQ: b[o+1] != 0, ResponderResources: b[o+2], InitiatorDepth: b[o+3],
		FlowControl: b[o+4] != 0, RetryCount: b[o+5], RNRRetryCount: b[o+6],
	}
	if n > 0 {
		p.PrivateData = append([]byte(nil), b[8:8+min(n, MaxPrivateData)]...)
	}
	return p
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
