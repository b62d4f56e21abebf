package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// roceQueryEngine is the only query upstream accepts on an endpoint URI (roce only).
const roceQueryEngine = "engine=ibverbs"

// ParseEndpoint parses a socket URI `scheme://host[:port][?engine=ibverbs]` (§2.4 of the
// upstream schema). Schemes are tcp, udp and roce, with rdma accepted as an alias of roce.
// The host is an IPv4 address, a host name, or (tcp and udp) an IPv6 address in brackets,
// `udp://[::1]:4096` — Host then holds the address without them. A missing port leaves Port 0; whether that is
// allowed depends on the endpoint's role and is checked by Validate (only a RoCE client's
// local address may omit it).
func ParseEndpoint(uri string) (Endpoint, error) {
	i := strings.Index(uri, "://")
	if i <= 0 {
		return Endpoint{}, fmt.Errorf("%q must have the form scheme://ipv4[:port]", uri)
	}
	var e Endpoint
	switch scheme := uri[:i]; scheme {
	case "tcp":
		e.Proto = ProtoTCP
	case "udp":
		e.Proto = ProtoUDP
	case "roce", "rdma":
		e.Proto = ProtoRoCE
	default:
		return Endpoint{}, fmt.Errorf("unknown scheme %q in %q (valid: tcp, udp, roce)", scheme, uri)
	}
	rest := uri[i+3:]
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		e.Query = rest[q+1:]
		rest = rest[:q]
		if err := checkQuery(e.Proto, e.Query); err != nil {
			return Endpoint{}, fmt.Errorf("%q: %v", uri, err)
		}
	}
	if rest == "" || strings.Contains(rest, "/") {
		return Endpoint{}, fmt.Errorf("%q must have the form scheme://ipv4[:port]", uri)
	}
	e.Host = rest
	if strings.HasPrefix(rest, "[") {
		// IPv6: [address] or [address]:port (RFC 3986 §3.2.2).
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return Endpoint{}, fmt.Errorf("%q: an IPv6 host needs its closing ']'", uri)
		}
		e.Host = rest[1:end]
		a, err := netip.ParseAddr(e.Host)
		if err != nil || !a.Is6() || a.Is4In6() {
			return Endpoint{}, fmt.Errorf("%q: %q in brackets is not an IPv6 address", uri, e.Host)
		}
		if e.Proto == ProtoRoCE {
			return Endpoint{}, fmt.Errorf("%q: roce endpoints take an IPv4 address", uri)
		}
		switch after := rest[end+1:]; {
		case after == "":
		case strings.HasPrefix(after, ":") && len(after) > 1:
			p, err := strconv.ParseUint(after[1:], 10, 64)
			if err != nil || p > 65535 {
				return Endpoint{}, fmt.Errorf("port %q in %q is not a number in 1..65535", after[1:], uri)
			}
			e.Port = int(p)
		default:
			return Endpoint{}, fmt.Errorf("%q: after the IPv6 address comes nothing or :port", uri)
		}
		return e, nil
	}
	if strings.Count(rest, ":") > 1 {
		return Endpoint{}, fmt.Errorf("%q: an IPv6 address goes in brackets, scheme://[address]:port", uri)
	}
	if c := strings.LastIndexByte(rest, ':'); c >= 0 {
		e.Host = rest[:c]
		ps := rest[c+1:]
		if e.Host == "" || ps == "" {
			return Endpoint{}, fmt.Errorf("%q must include a host and a port after ':'", uri)
		}
		p, err := strconv.ParseUint(ps, 10, 64)
		if err != nil {
			return Endpoint{}, fmt.Errorf("port %q in %q is not a number", ps, uri)
		}
		if p > 65535 {
			return Endpoint{}, fmt.Errorf("port %d in %q is out of range 1..65535", p, uri)
		}
		e.Port = int(p)
	}
	if err := checkHost(e.Host); err != nil {
		return Endpoint{}, fmt.Errorf("%q: %v", uri, err)
	}
	return e, nil
}

// checkQuery accepts only roce's `engine=ibverbs` (upstream common.cpp parse_endpoint_query).
func checkQuery(p Protocol, q string) error {
	if q == "" {
		return nil
	}
	if p != ProtoRoCE {
		return fmt.Errorf("query parameters are only allowed on roce:// endpoints")
	}
	for _, item := range strings.Split(q, "&") {
		if item != roceQueryEngine {
			return fmt.Errorf("query parameter %q is not supported (the only one is %s)", item, roceQueryEngine)
		}
	}
	return nil
}

// checkHost accepts an IP address or a DNS host name.
func checkHost(h string) error {
	if h == "" {
		return fmt.Errorf("host is empty")
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil // IPv4, or IPv6 (written in brackets in a URI)
	}
	if strings.Trim(h, "0123456789.") == "" {
		return fmt.Errorf("host %q is not a valid IPv4 address", h)
	}
	if len(h) > 253 {
		return fmt.Errorf("host name is longer than 253 characters")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host %q is neither an IPv4 address nor a host name", h)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("host %q is neither an IPv4 address nor a host name", h)
			}
		}
	}
	return nil
}
