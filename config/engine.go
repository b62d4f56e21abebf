package config

import (
	"net/netip"
	"regexp"
)

// engineIBVerbs is upstream's name for its verbs engines: RoCE on socket streams, raw
// Ethernet on ConnectX (our mlx5) on raw streams.
const engineIBVerbs = "ibverbs"

// validEngineNames lists what `engine:` accepts, for error messages.
const validEngineNames = "default, dpdk, socket, ibverbs, roce, xdp, mlx5, loopback"

// engineError checks the configuration-wide engine settings (stream_type, engine, loopback)
// that every interface's resolution depends on, and returns the first problem (nil when they
// are consistent).
func (c *Config) engineError() *Error {
	for _, f := range []func() *Error{c.streamTypeError, c.engineNameError, c.loopbackError} {
		if e := f(); e != nil {
			return e
		}
	}
	return nil
}

func (c *Config) streamTypeError() *Error {
	switch c.StreamType {
	case StreamRaw, StreamSocket:
		return nil
	case "":
		return c.Errorf("stream_type", "stream_type is required (raw or socket)")
	}
	return c.Errorf("stream_type", "invalid stream_type %q (valid: raw, socket)", c.StreamType)
}

func (c *Config) engineNameError() *Error {
	switch c.Engine {
	case "", EngineDefault, EngineDPDK, EngineSocket, engineIBVerbs, EngineRoCE, EngineXDP, EngineMLX5, EngineLoopback:
	case "rdma":
		return c.Errorf("engine", "engine rdma is not an engine name: use engine: ibverbs (RoCE over verbs on socket streams) or leave it to default")
	default:
		return c.Errorf("engine", "unknown engine %q (valid: %s)", c.Engine, validEngineNames)
	}
	switch c.StreamType {
	case StreamRaw:
		switch c.Engine {
		case EngineSocket, EngineRoCE:
			return c.Errorf("engine", "engine %q is not valid for stream_type raw (valid: default, dpdk, ibverbs, mlx5, xdp, loopback)", c.Engine)
		}
	case StreamSocket:
		switch c.Engine {
		case EngineDPDK, EngineXDP, EngineMLX5, EngineLoopback:
			return c.Errorf("engine", "engine %q is not valid for stream_type socket (valid: default, socket, ibverbs, roce)", c.Engine)
		}
	}
	return nil
}

func (c *Config) loopbackError() *Error {
	switch c.Loopback {
	case "":
	case "sw":
		if c.StreamType == StreamSocket {
			return c.Errorf("loopback", "loopback: sw is the software loopback of raw streams; stream_type is socket")
		}
		switch c.Engine {
		case "", EngineDefault, EngineDPDK, EngineLoopback:
		default:
			return c.Errorf("loopback", "loopback: sw selects the software loopback engine and cannot be combined with engine: %s", c.Engine)
		}
	case "hw":
		if c.StreamType == StreamSocket {
			return c.Errorf("loopback", "loopback: hw is the NIC loopback of raw streams; stream_type is socket")
		}
		switch c.Engine {
		case "", EngineDefault, engineIBVerbs, EngineMLX5:
		default:
			return c.Errorf("loopback", "loopback: hw loops a ConnectX port's transmit into its receive (engine mlx5) and cannot be combined with engine: %s", c.Engine)
		}
	default:
		return c.Errorf("loopback", "invalid loopback %q (valid: \"\" for none, sw for the software loopback, hw for the ConnectX NIC loopback of engine mlx5)", c.Loopback)
	}
	return nil
}

// pciAddr matches a PCI address: dddd:bb:dd.f, or bb:dd.f in domain 0.
var pciAddr = regexp.MustCompile(`^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// IsPCIAddress reports whether s is a PCI address (dddd:bb:dd.f or bb:dd.f).
func IsPCIAddress(s string) bool { return pciAddr.MatchString(s) }

// IsModelAddress reports whether s names a port of the ConnectX device model in this process
// (model:N, model:N@IFNAME, or vfio+model:N for the VFIO transport), which engine mlx5 serves.
func IsModelAddress(s string) bool { return modelAddr.MatchString(s) }

// modelAddr matches model:N, model:N@IFNAME and their vfio+ forms.
var modelAddr = regexp.MustCompile(`^(vfio\+)?model:[0-9]{1,4}(@[^\s/:]{1,15})?$`)

// IsNetdevName reports whether s is a valid Linux network interface name: 1 to 15 printable
// characters, none of them '/', ':' or white space, and not "." or "..".
func IsNetdevName(s string) bool {
	if len(s) == 0 || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch <= ' ' || ch >= 0x7f || ch == '/' || ch == ':' {
			return false
		}
	}
	return true
}

// ResolveEngine names the engine that serves interface iface (an index into Interfaces): one
// of EngineSocket, EngineRoCE, EngineLoopback, EngineMLX5, EngineXDP or EngineDPDK.
//
// Socket streams: roce:// endpoints (or engine ibverbs/roce) → roce; tcp:// and udp:// →
// socket. Raw streams: `loopback: sw` (or engine loopback) → loopback; engine dpdk → dpdk;
// engine ibverbs or mlx5 → mlx5; engine xdp → xdp; otherwise the address decides: a PCI
// address → mlx5, a Linux netdev name → xdp. While the deciding value is an upstream
// `<placeholder>` the result is "" with a nil error: the configuration is a template.
func (c *Config) ResolveEngine(iface int) (string, error) {
	if iface < 0 || iface >= len(c.Interfaces) {
		return "", c.Errorf("interfaces", "no interface %d (the configuration has %d)", iface, len(c.Interfaces))
	}
	if e := c.engineError(); e != nil {
		return "", e
	}
	ifc := &c.Interfaces[iface]
	p := indexPath("interfaces", iface)
	if c.StreamType == StreamSocket {
		if ifc.Socket == nil {
			return "", c.Errorf(p+".socket_config", "interfaces of stream_type socket need socket_config")
		}
		proto := ifc.Socket.Proto()
		if proto == "" {
			proto = c.socketProtocol()
		}
		switch proto {
		case ProtoRoCE:
			return EngineRoCE, nil
		case ProtoTCP, ProtoUDP:
			switch c.Engine {
			case engineIBVerbs, EngineRoCE:
				return "", c.Errorf("engine", "engine %s serves roce:// endpoints; %s:// endpoints need engine socket (or default)", c.Engine, proto)
			}
			return EngineSocket, nil
		case "":
			sp := p + ".socket_config."
			if c.isPlaceholder(sp+"local_addr") || c.isPlaceholder(sp+"remote_addr") || c.isPlaceholder(sp+"local_ip") || c.isPlaceholder(sp+"remote_ip") {
				return "", nil
			}
			return "", c.Errorf(p+".socket_config", "missing socket protocol: set local_addr or remote_addr as scheme://ip:port (tcp, udp or roce)")
		default:
			return "", c.Errorf(p+".socket_config", "unknown socket protocol %q (valid: tcp, udp, roce)", proto)
		}
	}
	// Raw Ethernet.
	if c.Loopback == "sw" || c.Engine == EngineLoopback {
		return EngineLoopback, nil
	}
	switch c.Engine {
	case EngineDPDK:
		return EngineDPDK, nil
	case engineIBVerbs, EngineMLX5:
		return EngineMLX5, nil
	case EngineXDP:
		return EngineXDP, nil
	}
	if c.isPlaceholder(p + ".address") {
		return "", nil
	}
	addr := ifc.Address
	switch {
	case addr == "":
		return "", c.Errorf(p+".address", "raw interfaces need an address: a Linux netdev name (engine xdp) or a PCI address (engine mlx5)")
	case IsPCIAddress(addr), IsModelAddress(addr), c.Loopback == "hw":
		return EngineMLX5, nil
	case isIP(addr):
		return "", c.Errorf(p+".address", "address %q is an IP address; raw interfaces need a Linux netdev name (engine xdp) or a PCI address (engine mlx5)", addr)
	case IsNetdevName(addr):
		return EngineXDP, nil
	}
	return "", c.Errorf(p+".address", "address %q is neither a PCI address (dddd:bb:dd.f) nor a Linux netdev name", addr)
}

// isIP reports whether s parses as an IP address.
func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// socketProtocol is the protocol of the first endpoint in the configuration ("" if none):
// upstream infers one protocol for the whole configuration.
func (c *Config) socketProtocol() Protocol {
	for i := range c.Interfaces {
		if s := c.Interfaces[i].Socket; s != nil {
			if p := s.Proto(); p != "" {
				return p
			}
		}
	}
	return ""
}

// isPlaceholder reports whether path holds an upstream `<placeholder>` value.
func (c *Config) isPlaceholder(path string) bool {
	for _, p := range c.Placeholders {
		if p == path {
			return true
		}
	}
	return false
}

// engineCanDirect reports whether an engine implements poll_mode direct.
func engineCanDirect(engine string) bool { return engine == EngineXDP || engine == EngineMLX5 }
