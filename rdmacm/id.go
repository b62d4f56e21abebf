package rdmacm

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/daqiri-go/daqiri/verbs"
)

// PortSpace is enum rdma_ucm_port_space: which service-id space an ID's
// port numbers live in. Both ends of a connection must use the same one.
type PortSpace uint16

// Port spaces.
const (
	// PSTCP: reliable connected QPs (RC); what rping, perftest -R and
	// librdmacm's default use.
	PSTCP PortSpace = 0x0106
	// PSUDP: unreliable datagram QPs (UD).
	PSUDP PortSpace = 0x0111
	// PSIB: any QP type, given at CreateID (the way to connect UC QPs).
	PSIB PortSpace = 0x013F
)

// String names the port space.
func (p PortSpace) String() string {
	switch p {
	case PSTCP:
		return "TCP"
	case PSUDP:
		return "UDP"
	case PSIB:
		return "IB"
	}
	return fmt.Sprintf("PortSpace(%#x)", uint16(p))
}

// ID is an rdma_cm identifier (struct rdma_cm_id): an endpoint that is bound,
// resolves addresses, listens, or carries one connection.
type ID struct {
	ch        *Channel
	handle    uint32
	uid       uint64
	ps        PortSpace
	qpType    verbs.QPType
	destroyed atomic.Bool
}

// CreateID creates an ID in port space ps for QPs of type qpType (the kernel
// takes the type from the port space for PSTCP (RC) and PSUDP (UD); PSIB
// needs it).
func (ch *Channel) CreateID(ps PortSpace, qpType verbs.QPType) (*ID, error) {
	if err := ch.begin(); err != nil {
		return nil, err
	}
	switch ps {
	case PSTCP:
		qpType = verbs.QPTypeRC
	case PSUDP:
		qpType = verbs.QPTypeUD
	case PSIB:
		if qpType != verbs.QPTypeRC && qpType != verbs.QPTypeUC && qpType != verbs.QPTypeUD {
			return nil, fmt.Errorf("rdmacm: port space IB needs an RC, UC or UD QP type, not %v", qpType)
		}
	default:
		return nil, fmt.Errorf("rdmacm: unknown port space %v", ps)
	}
	id := &ID{ch: ch, ps: ps, qpType: qpType}
	ch.register(id)
	req := make([]byte, sizeofCreateID)
	ne.PutUint64(req[0:], id.uid)
	ne.PutUint16(req[16:], uint16(ps))
	req[18] = uint8(qpType)
	c := &command{op: fmt.Sprintf("write CREATE_ID(%v, %v)", ps, qpType), cmd: cmdCreateID, req: req, out: sizeofCreateIDResp}
	if err := ch.do(c, 8); err != nil {
		ch.unregister(id)
		return nil, err
	}
	id.handle = ne.Uint32(c.resp)
	return id, nil
}

// Handle is the kernel's handle of the ID (for diagnostics).
func (id *ID) Handle() uint32 { return id.handle }

// Channel is the channel the ID belongs to.
func (id *ID) Channel() *Channel { return id.ch }

// PortSpace is the ID's port space.
func (id *ID) PortSpace() PortSpace { return id.ps }

// QPType is the type of QP the ID connects.
func (id *ID) QPType() verbs.QPType { return id.qpType }

func (id *ID) begin() error {
	if id.destroyed.Load() {
		return fmt.Errorf("%w: rdma_cm ID %d", ErrClosed, id.handle)
	}
	return id.ch.begin()
}

func (id *ID) do(c *command, respAt int) error {
	if err := id.begin(); err != nil {
		return err
	}
	return id.ch.do(c, respAt)
}

// Bind binds the ID to a local address and port (port 0 picks one). It
// fails with EADDRNOTAVAIL when no local interface has the address.
func (id *ID) Bind(a netip.AddrPort) error {
	req := make([]byte, sizeofBind)
	ne.PutUint32(req[0:], id.handle)
	n := encodeSockaddr(req[8:], a)
	ne.PutUint16(req[4:], uint16(n))
	return id.do(&command{op: fmt.Sprintf("write BIND(%v)", a), cmd: cmdBind, req: req}, 0)
}

// ResolveAddr starts resolving dst (and src, when valid, as the local
// address) to an RDMA device and port; EventAddrResolved or EventAddrError
// follows, the latter at the latest after timeout.
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	ms, err := timeoutMS(timeout)
	if err != nil {
		return err
	}
	req := make([]byte, sizeofResolveAddr)
	ne.PutUint32(req[0:], id.handle)
	ne.PutUint32(req[4:], ms)
	if src.IsValid() {
		ne.PutUint16(req[8:], uint16(encodeSockaddr(req[16:], src)))
	}
	ne.PutUint16(req[10:], uint16(encodeSockaddr(req[16+sizeofSockaddrStore:], dst)))
	from := "any"
	if src.IsValid() {
		from = src.String()
	}
	return id.do(&command{op: fmt.Sprintf("write RESOLVE_ADDR(%s→%v)", from, dst), cmd: cmdResolveAddr, req: req}, 0)
}

// ResolveRoute starts resolving the route to the resolved address;
// EventRouteResolved or EventRouteError follows.
func (id *ID) ResolveRoute(timeout time.Duration) error {
	ms, err := timeoutMS(timeout)
	if err != nil {
		return err
	}
	req := make([]byte, sizeofResolveRoute)
	ne.PutUint32(req[0:], id.handle)
	ne.PutUint32(req[4:], ms)
	return id.do(&command{op: "write RESOLVE_ROUTE", cmd: cmdResolveRoute, req: req}, 0)
}

func timeoutMS(d time.Duration) (uint32, error) {
	if d <= 0 || d > time.Hour {
		return 0, fmt.Errorf("rdmacm: timeout %v out of range (0, 1h]", d)
	}
	return uint32((d + time.Millisecond - 1) / time.Millisecond), nil
}

// Listen makes a bound ID accept connection requests; at most backlog wait
// unanswered (EventConnectRequest each).
func (id *ID) Listen(backlog int) error {
	if backlog <= 0 {
		return fmt.Errorf("rdmacm: listen backlog %d must be > 0", backlog)
	}
	req := make([]byte, sizeofListen)
	ne.PutUint32(req[0:], id.handle)
	ne.PutUint32(req[4:], uint32(backlog))
	return id.do(&command{op: "write LISTEN", cmd: cmdListen, req: req}, 0)
}

// Connect sends a connection request for the QP p.QPNum (in INIT state, see
// InitQPAttr) over the resolved route. The peer's answer arrives as
// EventConnectResponse (then move the QP to RTR and RTS and call
// EstablishActive), EventRejected or EventUnreachable. At most
// MaxConnectPrivateData bytes of private data reach the peer.
func (id *ID) Connect(p ConnParam) error {
	req := make([]byte, sizeofConnect)
	if err := p.encode(req[0:], MaxConnectPrivateData); err != nil {
		return err
	}
	ne.PutUint32(req[sizeofConnParam:], id.handle)
	return id.do(&command{op: "write CONNECT", cmd: cmdConnect, req: req}, 0)
}

// Accept answers a connection request (on the ID of EventConnectRequest)
// with the local QP p.QPNum, which must already be in RTR or RTS; the peer
// then completes the handshake and EventEstablished follows. At most
// MaxAcceptPrivateData bytes of private data reach the peer.
func (id *ID) Accept(p ConnParam) error {
	req := make([]byte, sizeofAccept)
	ne.PutUint64(req[0:], id.uid)
	if err := p.encode(req[8:], MaxAcceptPrivateData); err != nil {
		return err
	}
	ne.PutUint32(req[8+sizeofConnParam:], id.handle)
	return id.do(&command{op: "write ACCEPT", cmd: cmdAccept, req: req}, 0)
}

// EstablishActive completes an outgoing connection after
// EventConnectResponse (the QP in RTS): it sends the IB CM's
// ready-to-use message. This is ACCEPT without connection parameters, as
// librdmacm issues it on the active side (ucma_process_conn_resp).
func (id *ID) EstablishActive() error {
	req := make([]byte, sizeofAccept)
	ne.PutUint64(req[0:], id.uid)
	ne.PutUint32(req[8+sizeofConnParam:], id.handle)
	return id.do(&command{op: "write ACCEPT(ready to use)", cmd: cmdAccept, req: req}, 0)
}

// Reject refuses a connection request, sending up to MaxRejectPrivateData
// bytes to the peer (which sees EventRejected).
func (id *ID) Reject(privateData []byte) error {
	if len(privateData) > MaxRejectPrivateData {
		return fmt.Errorf("rdmacm: %d bytes of reject private data, at most %d fit", len(privateData), MaxRejectPrivateData)
	}
	req := make([]byte, sizeofReject)
	ne.PutUint32(req[0:], id.handle)
	req[4] = uint8(len(privateData))
	copy(req[8:], privateData)
	return id.do(&command{op: "write REJECT", cmd: cmdReject, req: req}, 0)
}

// Disconnect tears the connection down: the peer sees EventDisconnected, and
// so does this side once the peer answers (or its timeout passes). Move the
// QP to ERR first so that no new work starts (librdmacm rdma_disconnect).
func (id *ID) Disconnect() error {
	req := make([]byte, sizeofDisconnect)
	ne.PutUint32(req[0:], id.handle)
	return id.do(&command{op: "write DISCONNECT", cmd: cmdDisconnect, req: req}, 0)
}

// InitQPAttr returns the attributes and mask that move a QP of this
// connection into state (INIT, RTR or RTS): port, P_Key, access flags, path,
// remote QP number and PSNs as the connection manager negotiated them
// (struct ib_uverbs_qp_attr, decoded by verbs.QPAttrFromKernel). Mask bits
// the legacy MODIFY_QP command does not take (above IB_QP_DEST_QPN) are
// cleared.
func (id *ID) InitQPAttr(state verbs.QPState) (verbs.QPAttr, verbs.QPAttrMask, error) {
	req := make([]byte, sizeofInitQPAttr)
	ne.PutUint32(req[8:], id.handle)
	ne.PutUint32(req[12:], uint32(state))
	c := &command{op: fmt.Sprintf("write INIT_QP_ATTR(%v)", state), cmd: cmdInitQPAttr, req: req, out: sizeofKernelQPAttr}
	if err := id.do(c, 0); err != nil {
		return verbs.QPAttr{}, 0, err
	}
	a, mask, err := verbs.QPAttrFromKernel(c.resp)
	if err != nil {
		return verbs.QPAttr{}, 0, err
	}
	return a, mask & (verbs.QPAttrDestQPN<<1 - 1), nil
}

// ModifyQP moves qp into state with the attributes InitQPAttr returns;
// adjust, when not nil, may change them first (for example a shorter
// minimum RNR timer).
func (id *ID) ModifyQP(qp *verbs.QP, state verbs.QPState, adjust func(*verbs.QPAttr, *verbs.QPAttrMask)) error {
	a, mask, err := id.InitQPAttr(state)
	if err != nil {
		return err
	}
	a.State = state
	mask |= verbs.QPAttrState
	if adjust != nil {
		adjust(&a, &mask)
	}
	return qp.Modify(&a, mask)
}

// SetAckTimeout sets the QP's local ACK timeout (4.096 µs × 2^v, v in 1..31)
// that InitQPAttr(RTS) reports, instead of the one derived from the path's
// packet lifetime (RDMA_OPTION_ID_ACK_TIMEOUT). Only RC IDs have one (the
// kernel refuses others with EINVAL). Set it before connecting or accepting.
func (id *ID) SetAckTimeout(v uint8) error {
	if v == 0 || v > 31 {
		return fmt.Errorf("rdmacm: ACK timeout exponent %d out of range 1..31", v)
	}
	return id.setOption(optionLevelID, optionIDAckTimeout, []byte{v}, "ACK_TIMEOUT")
}

// SetReuseAddr lets the ID bind to an address and port that a connection in
// TIME_WAIT still holds (RDMA_OPTION_ID_REUSEADDR).
func (id *ID) SetReuseAddr(on bool) error {
	var v [4]byte
	if on {
		ne.PutUint32(v[:], 1)
	}
	return id.setOption(optionLevelID, optionIDReuseAddr, v[:], "REUSEADDR")
}

func (id *ID) setOption(level, name uint32, val []byte, label string) error {
	buf := make([]byte, len(val))
	copy(buf, val)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	req := make([]byte, sizeofSetOption)
	ne.PutUint64(req[0:], uint64(uintptr(unsafe.Pointer(&buf[0]))))
	ne.PutUint32(req[8:], id.handle)
	ne.PutUint32(req[12:], level)
	ne.PutUint32(req[16:], name)
	ne.PutUint32(req[20:], uint32(len(buf)))
	err := id.do(&command{op: "write SET_OPTION(" + label + ")", cmd: cmdSetOption, req: req}, 0)
	runtime.KeepAlive(buf)
	return err
}

// AddrInfo is what the kernel knows of an ID's addresses and device
// (RDMA_USER_CM_QUERY_ADDR).
type AddrInfo struct {
	// NodeGUID is the RDMA device's node GUID as sysfs prints it
	// ("xxxx:xxxx:xxxx:xxxx"); "" before the ID is bound to a device.
	NodeGUID string
	// Port is the device port (from 1); PKey the partition key.
	Port uint8
	PKey uint16
	// Src and Dst are the local and remote addresses.
	Src, Dst netip.AddrPort
	// DeviceIndex is the kernel's index of the device (ibdev_index); -1
	// when the kernel does not report it.
	DeviceIndex int
}

// QueryAddr reads the ID's addresses, device and port.
func (id *ID) QueryAddr() (AddrInfo, error) {
	req := make([]byte, sizeofQuery)
	ne.PutUint32(req[8:], id.handle)
	ne.PutUint32(req[12:], queryAddr)
	c := &command{op: "write QUERY(ADDR)", cmd: cmdQuery, req: req, out: sizeofQueryAddrResp}
	// Older kernels leave ibdev_index untouched: preset "unknown" (-1).
	c.respInit = make([]byte, sizeofQueryAddrResp)
	ne.PutUint32(c.respInit[272:], 0xffffffff)
	if err := id.do(c, 0); err != nil {
		return AddrInfo{}, err
	}
	r := c.resp
	ai := AddrInfo{Port: r[8], PKey: ne.Uint16(r[10:]), DeviceIndex: int(int32(ne.Uint32(r[272:])))}
	if g := r[0:8]; !allZero(g) {
		h := hex.EncodeToString(g)
		ai.NodeGUID = strings.Join([]string{h[0:4], h[4:8], h[8:12], h[12:16]}, ":")
	}
	ai.Src = decodeSockaddr(r[16 : 16+sizeofSockaddrStore])
	ai.Dst = decodeSockaddr(r[16+sizeofSockaddrStore : 16+2*sizeofSockaddrStore])
	return ai, nil
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// Device finds the verbs device the ID is bound to (after Bind, ResolveAddr
// or a connection request) by its node GUID, and returns it with the port.
func (id *ID) Device() (verbs.DeviceInfo, uint8, error) {
	ai, err := id.QueryAddr()
	if err != nil {
		return verbs.DeviceInfo{}, 0, err
	}
	if ai.NodeGUID == "" {
		return verbs.DeviceInfo{}, 0, fmt.Errorf("rdmacm: ID %d is not bound to an RDMA device yet (local address %v)", id.handle, ai.Src)
	}
	devs, err := verbs.Devices()
	if err != nil {
		return verbs.DeviceInfo{}, 0, err
	}
	for _, d := range devs {
		if strings.EqualFold(d.NodeGUID, ai.NodeGUID) {
			return d, ai.Port, nil
		}
	}
	return verbs.DeviceInfo{}, 0, fmt.Errorf("rdmacm: no RDMA device in sysfs has node GUID %s (the device of %v)", ai.NodeGUID, ai.Src)
}

// Destroy destroys the ID: a connection it carries is torn down, events not
// yet read for it are discarded. It returns how many events the kernel had
// reported for it.
func (id *ID) Destroy() (int, error) {
	if id.destroyed.Swap(true) {
		return 0, nil
	}
	id.ch.unregister(id)
	if id.ch.closed.Load() {
		return 0, nil // closing the channel destroyed it
	}
	return id.destroyKernelCount()
}

func (id *ID) destroyKernel() error {
	_, err := id.destroyKernelCount()
	return err
}

func (id *ID) destroyKernelCount() (int, error) {
	req := make([]byte, sizeofDestroyID)
	ne.PutUint32(req[8:], id.handle)
	c := &command{op: "write DESTROY_ID", cmd: cmdDestroyID, req: req, out: sizeofDestroyIDResp}
	if err := id.ch.do(c, 0); err != nil {
		return 0, err
	}
	return int(ne.Uint32(c.resp)), nil
}
