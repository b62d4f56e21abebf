package verbs

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// RDMA netlink facts (include/uapi/rdma/rdma_netlink.h, Linux 6.1): the
// NETLINK_RDMA family, the NLDEV client, RES_GET and its summary
// attributes. Messages carry attributes right after the netlink header.
const (
	netlinkRDMA             = 20
	rdmaNLNldev             = 5
	nldevCmdResGet          = 9
	nldevAttrDevIndex       = 1
	nldevAttrDevName        = 2
	nldevAttrResSummary     = 15
	nldevAttrResSummaryEnt  = 16
	nldevAttrResSummaryName = 17
	nldevAttrResSummaryCurr = 18
	nlaTypeMask             = 0x3fff // strips NLA_F_NESTED / NLA_F_NET_BYTEORDER
)

// ResourceSummary returns the kernel's per-device object counts ("pd",
// "cq", "qp", "cm_id", "mr", "ctx", "srq"), as `rdma resource` shows them,
// keyed by device name. It reads RDMA netlink, so it needs no tool; it
// lets tests prove that closing objects returns the counts to where they
// started.
func ResourceSummary() (map[string]map[string]uint64, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, netlinkRDMA)
	if err != nil {
		return nil, fmt.Errorf("verbs: open RDMA netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("verbs: bind RDMA netlink socket: %w", err)
	}
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	const seq = 1
	req := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], rdmaNLNldev<<10|nldevCmdResGet)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], seq)
	binary.NativeEndian.PutUint32(req[12:], uint32(os.Getpid()))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("verbs: send RDMA netlink RES_GET: %w", err)
	}
	out := map[string]map[string]uint64{}
	buf := make([]byte, 1<<16)
	for range 1000 { // a dump of a few devices takes a handful of reads
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("verbs: read RDMA netlink RES_GET: %w", err)
		}
		msgs, err := parseNetlink(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.typ {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.data)); e != 0 {
						return nil, fmt.Errorf("verbs: RDMA netlink RES_GET: %w", unix.Errno(-e))
					}
				}
				return out, nil
			}
			name, counts := parseResSummary(m.data)
			if name != "" {
				out[name] = counts
			}
		}
	}
	return nil, fmt.Errorf("verbs: RDMA netlink RES_GET did not finish")
}

type nlMsg struct {
	typ  uint16
	data []byte
}

func parseNetlink(b []byte) ([]nlMsg, error) {
	var msgs []nlMsg
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return nil, fmt.Errorf("verbs: malformed netlink message of length %d in %d bytes", l, len(b))
		}
		msgs = append(msgs, nlMsg{typ: binary.NativeEndian.Uint16(b[4:]), data: b[unix.NLMSG_HDRLEN:l]})
		al := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if al > len(b) {
			break
		}
		b = b[al:]
	}
	return msgs, nil
}

// attrs walks netlink attributes, calling fn with the type (flags masked)
// and payload of each.
func attrs(b []byte, fn func(typ uint16, v []byte)) {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:]))
		if l < 4 || l > len(b) {
			return
		}
		fn(binary.NativeEndian.Uint16(b[2:])&nlaTypeMask, b[4:l])
		al := (l + 3) &^ 3
		if al > len(b) {
			return
		}
		b = b[al:]
	}
}

func cstring(v []byte) string {
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

func parseResSummary(b []byte) (string, map[string]uint64) {
	name := ""
	counts := map[string]uint64{}
	attrs(b, func(t uint16, v []byte) {
		switch t {
		case nldevAttrDevName:
			name = cstring(v)
		case nldevAttrResSummary:
			attrs(v, func(t uint16, e []byte) {
				if t != nldevAttrResSummaryEnt {
					return
				}
				var n string
				var cur uint64
				attrs(e, func(t uint16, f []byte) {
					switch t {
					case nldevAttrResSummaryName:
						n = cstring(f)
					case nldevAttrResSummaryCurr:
						if len(f) >= 8 {
							cur = binary.NativeEndian.Uint64(f)
						}
					}
				})
				if n != "" {
					counts[n] = cur
				}
			})
		}
	})
	return name, counts
}
