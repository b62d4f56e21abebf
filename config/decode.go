package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Load loads a configuration the way upstream's daqiri_init(string) does: when s names an
// existing file it is read; otherwise, when s ends in .yaml or .yml, that missing file is an
// error; otherwise s itself is parsed as YAML text.
func Load(s string) (*Config, error) {
	if _, err := os.Stat(s); err == nil {
		return LoadFile(s) // refuses what is not a regular file, with a message
	}
	if l := strings.ToLower(s); strings.HasSuffix(l, ".yaml") || strings.HasSuffix(l, ".yml") {
		return LoadFile(s)
	}
	return Parse([]byte(s), "")
}

// LoadFile reads and parses the YAML configuration file at path (see Parse). A missing file
// is an error that says so (errors.Is(err, fs.ErrNotExist) holds). Only regular files of at
// most MaxConfigBytes are read: a device (/dev/zero), a FIFO or a directory is refused without
// reading from it or waiting on it.
func LoadFile(path string) (*Config, error) {
	// O_NONBLOCK: opening a FIFO with no writer must not wait; it is refused below.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Msg: "configuration file does not exist", cause: err}
		}
		return nil, &Error{File: path, Msg: err.Error(), cause: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), cause: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: fmt.Sprintf("not a regular file (%s); a configuration must be a YAML file", fileKind(st.Mode()))}
	}
	if st.Size() > MaxConfigBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file is %d bytes; a configuration file may have at most %d", st.Size(), MaxConfigBytes)}
	}
	// The size can change between Stat and reading: read one byte past the limit to tell.
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), cause: err}
	}
	if len(data) > MaxConfigBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file grew past %d bytes while being read; a configuration file may have at most %d", MaxConfigBytes, MaxConfigBytes)}
	}
	return Parse(data, path)
}

// fileKind names a non-regular file's type for error messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}

// Parse decodes and validates a YAML configuration. name is used in error messages (a file
// name; "" reads as "<input>"). The document's root is either `daqiri: cfg: {...}`, with any
// other top-level keys kept as application sections (see App), or a bare config map, in which
// case every key must belong to the schema. A `%YAML 1.2` directive and `---` are accepted.
//
// Every problem is reported, not just the first: the error is an Errors list sorted by line,
// each element naming the key path and position. On error the returned Config is nil.
func Parse(data []byte, name string) (*Config, error) {
	if name == "" {
		name = "<input>"
	}
	c := &Config{src: &source{name: name, pos: map[string]pos{}}}
	d := &decoder{c: c, src: c.src}
	if len(data) > MaxConfigBytes {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("configuration is %d bytes; at most %d are accepted", len(data), MaxConfigBytes)}}
	}
	if e := notText(data); e != nil {
		e.File = name
		return nil, Errors{e}
	}
	data = fixYAMLDirective(data)
	c.src.data = data
	if root := d.document(data); root != nil && !d.tooBig {
		d.top(root)
	}
	d.inferLegacyProtocols()
	errs := d.errs
	if !d.tooBig {
		c.SetDefaults()
		for _, e := range c.check(d.failed...) {
			if !d.coveredByDecodeError(e.Path) {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	return c, nil
}

// coveredByDecodeError reports whether a validation error at path concerns a part of the
// configuration that failed to decode: the same key, a key inside a value that could not be
// decoded, or a map or list one of whose keys could not be decoded (whatever the validator
// says about it then is most likely a consequence). Such errors are not reported: the
// decoding error is the one to fix.
func (d *decoder) coveredByDecodeError(path string) bool {
	for _, f := range d.failed {
		if underPath(path, f) || underPath(f, path) && path != "" {
			return true
		}
	}
	return false
}

// utf8BOM may start a YAML stream.
var utf8BOM = []byte("\xef\xbb\xbf")

// yamlDirective matches a `%YAML 1.2` directive line.
var yamlDirective = regexp.MustCompile(`^%YAML[ \t]+1\.2([ \t]|$|#)`)

// fixYAMLDirective rewrites a leading `%YAML 1.2` directive to `%YAML 1.1`: the YAML library
// rejects 1.2 directives although it parses the documents upstream writes with them. The
// rewrite keeps every line and column where it was.
func fixYAMLDirective(data []byte) []byte {
	var out []byte
	off := 0
	for off < len(data) {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		line := data[off : off+end]
		if off == 0 && bytes.HasPrefix(line, utf8BOM) {
			line = line[len(utf8BOM):]
			off, end = off+len(utf8BOM), end-len(utf8BOM)
		}
		switch {
		case yamlDirective.Match(line):
			if out == nil {
				out = bytes.Clone(data)
			}
			out[off+bytes.Index(line, []byte("1.2"))+2] = '1'
		case len(bytes.TrimSpace(line)) == 0, line[0] == '#', line[0] == '%':
		default:
			off = len(data) // the directive prologue is over
		}
		off += end + 1
	}
	if out == nil {
		return data
	}
	return out
}

// yamlLine extracts the line from the YAML library's "yaml: line N: msg" errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses the single YAML document in data and returns its root node.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			d.failAt(&yaml.Node{Line: 1}, "", "the document is empty")
		} else {
			d.syntaxError(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == io.EOF:
	case err != nil:
		d.syntaxError(err)
		return nil
	default:
		d.failAt(&extra, "", "only one YAML document is supported; a second one starts here")
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return d.resolve(doc.Content[0])
	}
	d.failAt(&doc, "", "the document is empty")
	return nil
}

// syntaxError turns a YAML library error into an Error with a line. Errors caused by tab
// indentation, a common slip, are reported in plain words at the first tab-indented line.
func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	e := &Error{File: d.src.name, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
	}
	if line, col := tabIndent(d.src.data); line > 0 && (e.Line == 0 || line <= e.Line+1) {
		e.Line, e.Column = line, col
		e.Msg = "indentation uses a tab character; YAML indents with spaces only (the parser said: " + e.Msg + ")"
	}
	d.errs = append(d.errs, e)
	d.failed = append(d.failed, "")
}

// tabIndent finds the first line whose indentation holds a tab before any content (blank and
// comment lines aside), returning its line and the tab's column; 0, 0 when there is none.
func tabIndent(data []byte) (line, col int) {
	for i, l := range bytes.Split(data, []byte("\n")) {
		rest := bytes.TrimLeft(l, " \t")
		if len(rest) == 0 || rest[0] == '#' || rest[0] == '\r' {
			continue
		}
		if k := bytes.IndexByte(l[:len(l)-len(rest)], '\t'); k >= 0 {
			return i + 1, k + 1
		}
	}
	return 0, 0
}

// notText reports input that is not YAML text at all — bytes that are not UTF-8, or control
// characters YAML does not allow (NUL and the other C0 codes but tab, newline and carriage
// return, and DEL) — with the line and column of the first one.
func notText(data []byte) *Error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return &Error{Line: line, Column: col, Msg: fmt.Sprintf("byte 0x%02x is not UTF-8 text: a configuration must be a UTF-8 YAML file (is this a binary file?)", data[i])}
		case r == '\n':
			line, col = line+1, 0
		case r < 0x20 && r != '\t' && r != '\r', r == 0x7f:
			return &Error{Line: line, Column: col, Msg: fmt.Sprintf("control character 0x%02x is not allowed in YAML text (is this a binary file?)", r)}
		}
		i += size
		col++
	}
	return nil
}

// configKeys are the keys of a bare config map; next to `daqiri:` they are misplaced.
var configKeys = map[string]bool{
	"version": true, "master_core": true, "stream_type": true, "engine": true, "loopback": true,
	"debug": true, "log_level": true, "tx_meta_buffers": true, "rx_meta_buffers": true,
	"memory_regions": true, "interfaces": true,
}

// top handles the two root shapes.
func (d *decoder) top(root *yaml.Node) {
	if root.Kind != yaml.MappingNode {
		d.failAt(root, "", "the configuration must be a map (daqiri: cfg: {...} or a bare config map), got %s", kindName(root))
		return
	}
	var daqiri *yaml.Node
	var daqiriKey *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "daqiri" {
			daqiri, daqiriKey = d.resolve(root.Content[i+1]), k
			break
		}
	}
	if daqiri == nil {
		d.src.pos[""] = pos{root.Line, root.Column}
		d.config(root)
		return
	}
	// daqiri: cfg: form. Top-level keys other than daqiri are application sections.
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Kind != yaml.ScalarNode {
			d.failAt(k, "", "top-level keys must be plain strings, got %s", kindName(k))
			continue
		}
		if seen[k.Value] {
			d.failAt(k, k.Value, "duplicate top-level key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		switch {
		case k.Value == "daqiri":
		case k.Tag == "!!merge":
			d.failAt(k, "", "a << merge key at the top level is not supported: merge inside daqiri.cfg or inside an application section")
		case configKeys[k.Value]:
			d.failAt(k, k.Value, "%s belongs under daqiri: cfg:, not at the top level beside daqiri", k.Value)
		default:
			d.src.apps = append(d.src.apps, k.Value)
		}
	}
	d.src.pos["daqiri"] = pos{daqiriKey.Line, daqiriKey.Column}
	d.src.pos[""] = pos{daqiriKey.Line, daqiriKey.Column}
	var cfg *yaml.Node
	got := d.fields(daqiri, "daqiri", "the daqiri section", map[string]handler{
		"cfg": func(e entry) { cfg = e.v },
	}, nil)
	if got == nil {
		d.failed = append(d.failed, "")
		return
	}
	if cfg == nil {
		d.fail("daqiri.cfg", "the daqiri section needs cfg: (the configuration map)")
		d.failed = append(d.failed, "") // nothing to validate
		return
	}
	if p, ok := d.src.pos["daqiri.cfg"]; ok {
		d.src.pos[""] = p
	}
	delete(d.src.pos, "daqiri.cfg")
	delete(d.src.pos, "daqiri")
	d.config(cfg)
}

// legacyTop are removed top-level keys and how to migrate.
var legacyTop = map[string]string{
	"manager":  "the legacy key manager was removed: use engine: (dpdk, socket or ibverbs) and stream_type:",
	"protocol": "the legacy key protocol was removed: give the protocol as the scheme of socket_config.local_addr/remote_addr (tcp://, udp://, roce://)",
}

// config decodes the configuration map.
func (d *decoder) config(n *yaml.Node) {
	c := d.c
	got := d.fields(n, "", "the configuration", map[string]handler{
		"version":     intInto(d, &c.Version, math.MinInt32, math.MaxInt32),
		"master_core": intInto(d, &c.MasterCore, 0, math.MaxInt32),
		"stream_type": func(e entry) {
			if s, ok := d.str(e); ok {
				c.StreamType = StreamType(s)
			}
		},
		"engine": func(e entry) {
			if s, ok := d.str(e); ok {
				c.Engine = s
			}
		},
		"loopback": func(e entry) {
			if s, ok := d.str(e); ok {
				c.Loopback = s
			}
		},
		"debug": func(e entry) {
			if b, ok := d.boolean(e); ok {
				c.Debug = b
			}
		},
		"log_level": func(e entry) {
			if s, ok := d.str(e); ok {
				c.LogLevel = s
			}
		},
		"tx_meta_buffers": intInto(d, &c.TxMetaBuffers, 1, math.MaxInt32),
		"rx_meta_buffers": intInto(d, &c.RxMetaBuffers, 1, math.MaxInt32),
		"memory_regions": func(e entry) {
			items, _ := d.seq(e, "memory_regions")
			c.MemoryRegions = make([]MemoryRegion, len(items))
			for i, it := range items {
				d.memoryRegion(it, &c.MemoryRegions[i])
			}
		},
		"interfaces": func(e entry) {
			items, _ := d.seq(e, "interfaces")
			c.Interfaces = make([]Interface, len(items))
			for i, it := range items {
				d.iface(it, &c.Interfaces[i])
			}
		},
	}, legacyTop)
	d.require(got, "", "the configuration", "version", "stream_type", "interfaces")
}

// memoryRegion decodes one memory_regions[] item.
func (d *decoder) memoryRegion(it entry, mr *MemoryRegion) {
	mr.Access = AccessLocal
	got := d.fields(it.v, it.path, "a memory region", map[string]handler{
		"name": func(e entry) { mr.Name, _ = d.str(e) },
		"kind": func(e entry) {
			if s, ok := d.str(e); ok {
				mr.Kind = MemoryKind(s)
			}
		},
		"affinity": intInto(d, &mr.Affinity, 0, math.MaxInt32),
		"access": func(e entry) {
			names, ok := d.strList(e, "access")
			if !ok {
				return
			}
			if len(names) == 0 {
				d.fail(e.path, "access must list at least one of local, rdma_read, rdma_write")
				return
			}
			mr.Access = 0
			for i, s := range names {
				switch s {
				case "local":
					mr.Access |= AccessLocal
				case "rdma_write":
					mr.Access |= AccessRDMAWrite
				case "rdma_read":
					mr.Access |= AccessRDMARead
				default:
					d.fail(indexPath(e.path, i), "unknown access %q (valid: local, rdma_read, rdma_write)", s)
				}
			}
		},
		"num_bufs": intInto(d, &mr.NumBufs, math.MinInt64, math.MaxInt32),
		"buf_size": intInto(d, &mr.BufSize, math.MinInt64, math.MaxInt32),
		"owned": func(e entry) {
			if b, ok := d.boolean(e); ok {
				mr.Unowned = !b
			}
		},
	}, nil)
	d.require(got, it.path, "a memory region", "name", "kind", "affinity", "num_bufs", "buf_size")
}

// iface decodes one interfaces[] item.
func (d *decoder) iface(it entry, ifc *Interface) {
	got := d.fields(it.v, it.path, "an interface", map[string]handler{
		"name": func(e entry) { ifc.Name, _ = d.str(e) },
		"address": func(e entry) {
			if !d.placeholder(e) {
				ifc.Address, _ = d.str(e)
			}
		},
		"socket_config": func(e entry) {
			ifc.Socket = &SocketConfig{}
			d.socketConfig(e, ifc.Socket)
		},
		"roce_config": func(e entry) {
			ifc.RoCE = &RoCEConfig{}
			g := d.fields(e.v, e.path, "roce_config", map[string]handler{
				"transport_mode": func(e entry) { ifc.RoCE.TransportMode, _ = d.str(e) },
			}, nil)
			d.require(g, e.path, "roce_config", "transport_mode")
		},
		"rx": func(e entry) {
			ifc.RX = &RxConfig{}
			d.rx(e, ifc.RX)
		},
		"tx": func(e entry) {
			ifc.TX = &TxConfig{}
			d.tx(e, ifc.TX)
		},
	}, map[string]string{
		"rdma_config": "the legacy key rdma_config was removed: use socket_config (mode, local_addr: roce://ip:port) and roce_config (transport_mode)",
	})
	d.require(got, it.path, "an interface", "name", "address")
}

// socketConfig decodes socket_config.
func (d *decoder) socketConfig(se entry, sc *SocketConfig) {
	var legacyIP, legacyPort [2]*entry // [0] local, [1] remote
	intField := func(dst *int, lo, hi int64) handler {
		return func(e entry) {
			if v, ok := d.integer(e, lo, hi); ok {
				*dst = int(v)
			}
		}
	}
	uri := func(dst *Endpoint) handler {
		return func(e entry) {
			if d.placeholder(e) {
				return
			}
			s, ok := d.str(e)
			if !ok {
				return
			}
			ep, err := ParseEndpoint(s)
			if err != nil {
				d.fail(e.path, "%v", err)
				return
			}
			*dst = ep
		}
	}
	legacy := func(slot **entry) handler {
		return func(e entry) { *slot = &e }
	}
	got := d.fields(se.v, se.path, "socket_config", map[string]handler{
		"mode": func(e entry) {
			if s, ok := d.str(e); ok {
				sc.Mode = SocketMode(s)
			}
		},
		"local_addr":            uri(&sc.Local),
		"remote_addr":           uri(&sc.Remote),
		"local_ip":              legacy(&legacyIP[0]),
		"remote_ip":             legacy(&legacyIP[1]),
		"local_port":            legacy(&legacyPort[0]),
		"remote_port":           legacy(&legacyPort[1]),
		"max_payload_size":      intField(&sc.MaxPayload, 0, math.MaxInt32),
		"retry_connect_s":       intField(&sc.RetryConnectS, 1, math.MaxInt32),
		"max_burst_interval_ms": intField(&sc.MaxBurstIntervalMs, 0, math.MaxInt32),
		"min_ipg_ns":            intField(&sc.MinIPGNs, 0, math.MaxInt32),
		"recv_buffer_size":      intField(&sc.RecvBufferBytes, 0, math.MaxInt32),
		"send_buffer_size":      intField(&sc.SendBufferBytes, 0, math.MaxInt32),
		"max_connections":       intField(&sc.MaxConnections, 1, 65536),
	}, map[string]string{
		"protocol": "socket_config.protocol was removed: give the protocol as the scheme of local_addr/remote_addr (tcp://, udp://, roce://)",
	})
	if got == nil {
		return
	}
	d.require(got, se.path, "socket_config", "mode")
	names := [2]string{"local", "remote"}
	eps := [2]*Endpoint{&sc.Local, &sc.Remote}
	for i := range 2 {
		if legacyIP[i] == nil && legacyPort[i] == nil {
			continue
		}
		before := len(d.errs)
		d.legacyEndpoint(got, names[i], legacyIP[i], legacyPort[i], eps[i])
		if len(d.errs) > before {
			// A broken legacy endpoint is this side's endpoint: keep validation quiet about it.
			d.failed = append(d.failed, joinPath(se.path, names[i]+"_addr"))
		}
	}
}

// legacyEndpoint decodes side_ip/side_port (side is local or remote) into ep.
func (d *decoder) legacyEndpoint(got map[string]entry, side string, ipE, portE *entry, ep *Endpoint) {
	if _, ok := got[side+"_addr"]; ok {
		at := ipE
		if at == nil {
			at = portE
		}
		d.fail(at.path, "%s_addr cannot be combined with %s_ip/%s_port", side, side, side)
		return
	}
	port := 0
	if portE != nil {
		if v, ok := d.integer(*portE, 0, math.MaxUint16); ok {
			port = int(v)
		}
	}
	if ipE == nil {
		d.fail(portE.path, "%s_port needs %s_ip (or use %s_addr: scheme://ip:port)", side, side, side)
		return
	}
	if d.placeholder(*ipE) {
		return
	}
	host, ok := d.str(*ipE)
	if !ok {
		return
	}
	if err := checkHost(host); err != nil {
		d.fail(ipE.path, "%v", err)
		return
	}
	*ep = Endpoint{Host: host, Port: port}
	d.legacy = append(d.legacy, legacyEndpoint{ep: ep, path: ipE.path})
}

// inferLegacyProtocols gives local_ip/remote_ip endpoints the protocol of the configuration's
// URIs, as upstream does; with no URI anywhere there is no protocol to infer.
func (d *decoder) inferLegacyProtocols() {
	if len(d.legacy) == 0 {
		return
	}
	var proto Protocol
	for i := range d.c.Interfaces {
		if s := d.c.Interfaces[i].Socket; s != nil {
			for _, ep := range []Endpoint{s.Local, s.Remote} {
				if ep.Proto != "" && proto == "" {
					proto = ep.Proto
				}
			}
		}
	}
	for _, l := range d.legacy {
		if proto == "" {
			d.fail(l.path, "missing socket protocol: local_ip/remote_ip carry none; use local_addr/remote_addr with a scheme (tcp://, udp://, roce://)")
			continue
		}
		l.ep.Proto = proto
	}
}

// rx decodes an interface's rx block.
func (d *decoder) rx(re entry, rx *RxConfig) {
	d.fields(re.v, re.path, "rx", map[string]handler{
		"flow_isolation":        func(e entry) { rx.FlowIsolation, _ = d.boolean(e) },
		"dynamic_flow_capacity": intInto(d, &rx.DynamicFlowCapacity, 0, math.MaxUint32),
		"hardware_timestamps":   func(e entry) { rx.HardwareTimestamps, _ = d.boolean(e) },
		"queues": func(e entry) {
			items, _ := d.seq(e, "queues")
			rx.Queues = make([]Queue, len(items))
			for i, it := range items {
				d.queue(it, &rx.Queues[i], false)
			}
		},
		"flows": func(e entry) {
			items, _ := d.seq(e, "rx.flows")
			rx.Flows = make([]Flow, len(items))
			for i, it := range items {
				d.flow(it, &rx.Flows[i])
			}
		},
		"flex_items": func(e entry) {
			items, _ := d.seq(e, "flex_items")
			rx.FlexItems = make([]FlexItem, len(items))
			for i, it := range items {
				d.flexItem(it, &rx.FlexItems[i])
			}
		},
		"reorder_configs": func(e entry) {
			items, _ := d.seq(e, "reorder_configs")
			rx.Reorders = make([]Reorder, len(items))
			for i, it := range items {
				d.reorder(it, &rx.Reorders[i])
			}
		},
	}, nil)
}

// tx decodes an interface's tx block.
func (d *decoder) tx(te entry, tx *TxConfig) {
	d.fields(te.v, te.path, "tx", map[string]handler{
		"accurate_send": func(e entry) { tx.AccurateSend, _ = d.boolean(e) },
		"queues": func(e entry) {
			items, _ := d.seq(e, "queues")
			tx.Queues = make([]Queue, len(items))
			for i, it := range items {
				d.queue(it, &tx.Queues[i], true)
			}
		},
		"flows": func(e entry) {
			items, _ := d.seq(e, "tx.flows")
			tx.Flows = make([]Flow, len(items))
			for i, it := range items {
				d.flow(it, &tx.Flows[i])
			}
		},
	}, nil)
}

// queue decodes one rx.queues[] or tx.queues[] item.
func (d *decoder) queue(it entry, q *Queue, isTX bool) {
	hs := map[string]handler{
		"name": func(e entry) { q.Name, _ = d.str(e) },
		"id":   intInto(d, &q.ID, 0, math.MaxUint16),
		"poll_mode": func(e entry) {
			if s, ok := d.str(e); ok {
				q.PollMode = PollMode(s)
			}
		},
		"cpu_core": func(e entry) {
			if d.placeholder(e) {
				return
			}
			s, ok := d.scalar(e, "a CPU core number")
			if !ok {
				return
			}
			if e.v.Tag == "!!int" {
				if _, ok := d.integer(e, 0, math.MaxInt32); !ok {
					return
				}
			} else if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 0 {
				d.fail(e.path, "must be a CPU core number, got %s", kindName(e.v))
				return
			} else {
				s = strconv.Itoa(n)
			}
			q.CPUCore = s
		},
		"batch_size":     intInto(d, &q.BatchSize, math.MinInt64, MaxBatchSize),
		"timeout_us":     intInto(d, &q.TimeoutUs, 0, MaxTimeoutUs),
		"memory_regions": func(e entry) { q.MemoryRegions, _ = d.strList(e, "memory_regions") },
	}
	if isTX {
		hs["offloads"] = func(e entry) { q.Offloads, _ = d.strList(e, "offloads") }
		hs["pacing_mbps"] = func(e entry) {
			if v, ok := d.integer(e, 0, math.MaxInt32); ok {
				q.PacingMbps = int(v)
			}
		}
	}
	got := d.fields(it.v, it.path, "a queue", hs, nil)
	d.require(got, it.path, "a queue", "name", "id")
}

// flow decodes one rx.flows[] or tx.flows[] item.
func (d *decoder) flow(it entry, f *Flow) {
	got := d.fields(it.v, it.path, "a flow", map[string]handler{
		"name": func(e entry) { f.Name, _ = d.str(e) },
		"id":   intInto(d, &f.ID, 0, MaxFlowID),
		"action": func(e entry) {
			f.Actions = []Action{{}}
			d.action(e, &f.Actions[0])
		},
		"actions": func(e entry) {
			items, ok := d.seq(e, "actions")
			if !ok {
				return
			}
			if len(items) == 0 {
				d.fail(e.path, "actions must not be empty")
				return
			}
			if len(items) > MaxFlowActions {
				d.fail(e.path, "a flow has at most %d actions, got %d", MaxFlowActions, len(items))
				return
			}
			f.Actions = make([]Action, len(items))
			for i, a := range items {
				d.action(a, &f.Actions[i])
			}
		},
		"match": func(e entry) { d.match(e, &f.Match) },
	}, nil)
	if got == nil {
		return
	}
	d.require(got, it.path, "a flow", "name", "id")
	_, one := got["action"]
	_, many := got["actions"]
	switch {
	case one && many:
		d.fail(got["actions"].path, "a flow has either action or actions, not both")
	case !one && !many:
		d.fail(joinPath(it.path, "actions"), "a flow needs actions (or the legacy single action)")
	}
}

// Action keys, grouped by action type.
var (
	vlanKeys   = []string{"vlan_id", "pcp", "dei", "ethertype"}
	tunnelKeys = []string{"tunnel_type", "outer_eth_src", "outer_eth_dst", "outer_ipv4_src", "outer_ipv4_dst",
		"outer_ipv4_ttl", "outer_ipv4_tos", "vni", "outer_udp_src", "outer_udp_dst", "gre_protocol", "tni", "flow_id"}
	tunnelOnly = map[string]TunnelType{"vni": TunnelVXLAN, "outer_udp_src": TunnelVXLAN, "outer_udp_dst": TunnelVXLAN,
		"gre_protocol": TunnelGRE, "tni": TunnelNVGRE, "flow_id": TunnelNVGRE}
)

// action decodes one flow action. Its type decides which keys are allowed; the vlan and
// tunnel fields may be flat or nested under vlan:/tunnel:.
func (d *decoder) action(it entry, a *Action) {
	es, ok := d.mapping(it.v, it.path, "a flow action")
	if !ok {
		return
	}
	var typ *entry
	for i := range es {
		if es[i].key == "type" {
			typ = &es[i]
		}
	}
	if typ == nil {
		d.fail(joinPath(it.path, "type"), "a flow action needs type (queue, vlan_push, vlan_pop, tunnel_encap or tunnel_decap)")
		return
	}
	s, ok := d.str(*typ)
	if !ok {
		return
	}
	a.Type = ActionType(s)
	hs := map[string]handler{"type": func(entry) {}}
	switch a.Type {
	case ActionQueue:
		d.queueAction(es, it.path, a)
		return
	case ActionVLANPop:
	case ActionVLANPush:
		a.VLAN.EtherType = 0x8100
		d.vlanFields(hs, &a.VLAN)
		hs["vlan"] = func(e entry) {
			nested := map[string]handler{}
			d.vlanFields(nested, &a.VLAN)
			g := d.fields(e.v, e.path, "vlan", nested, nil)
			d.require(g, e.path, "vlan_push", "vlan_id")
		}
	case ActionTunnelEncap, ActionTunnelDecap:
		d.tunnelFields(hs, &a.Tunnel)
		hs["tunnel"] = func(e entry) {
			nested := map[string]handler{}
			d.tunnelFields(nested, &a.Tunnel)
			nested["type"] = nested["tunnel_type"]
			g := d.fields(e.v, e.path, "tunnel", nested, nil)
			d.tunnelChecks(g, e.path, &a.Tunnel)
		}
	default:
		d.fail(typ.path, "unknown action type %q (valid: queue, vlan_push, vlan_pop, tunnel_encap, tunnel_decap)", s)
		return
	}
	got := map[string]entry{}
	for _, e := range es {
		h, ok := hs[e.key]
		if !ok {
			d.fail(e.path, "unknown key %q in a %s action%s", e.key, a.Type, suggest(e.key, hs))
			continue
		}
		got[e.key] = e
		h(e)
	}
	switch a.Type {
	case ActionVLANPush:
		if _, nested := got["vlan"]; nested {
			d.exclusive(got, "vlan", vlanKeys)
		} else {
			d.require(got, it.path, "vlan_push", "vlan_id")
		}
	case ActionTunnelEncap, ActionTunnelDecap:
		if _, nested := got["tunnel"]; nested {
			d.exclusive(got, "tunnel", tunnelKeys)
		} else {
			d.tunnelChecks(got, it.path, &a.Tunnel)
		}
	}
}

// exclusive rejects flat fields next to their nested form.
func (d *decoder) exclusive(got map[string]entry, nested string, flat []string) {
	for _, k := range flat {
		if e, ok := got[k]; ok {
			d.fail(e.path, "%s is given both flat and under %s:; use one form", k, nested)
		}
	}
}

// queueActionKeys are the keys of a queue action, for "did you mean" hints.
var queueActionKeys = map[string]handler{"type": nil, "id": nil, "ids": nil}

// queueAction decodes a queue action's id or ids.
func (d *decoder) queueAction(es []entry, path string, a *Action) {
	got := map[string]entry{}
	for _, e := range es {
		switch e.key {
		case "type":
		case "id":
			if v, ok := d.uinteger(e, 0, math.MaxUint16); ok {
				a.Queues = []int{int(v)}
			}
		case "ids":
			items, ok := d.seq(e, "ids")
			if !ok {
				break
			}
			if len(items) == 0 {
				d.fail(e.path, "ids must list at least one queue id")
				break
			}
			a.Queues = make([]int, 0, len(items))
			seen := map[int64]bool{}
			for _, x := range items {
				v, ok := d.uinteger(x, 0, math.MaxUint16)
				if !ok {
					continue
				}
				if seen[v] {
					d.fail(x.path, "queue id %d is listed twice", v)
					continue
				}
				seen[v] = true
				a.Queues = append(a.Queues, int(v))
			}
		default:
			d.fail(e.path, "unknown key %q in a queue action%s", e.key, suggest(e.key, queueActionKeys))
			continue
		}
		got[e.key] = e
	}
	_, one := got["id"]
	_, many := got["ids"]
	switch {
	case one && many:
		d.fail(got["ids"].path, "a queue action has either id or ids, not both")
	case !one && !many:
		d.fail(joinPath(path, "id"), "a queue action needs id (or ids for RSS over several queues)")
	}
}

// vlanFields adds the vlan_push keys to hs.
func (d *decoder) vlanFields(hs map[string]handler, v *VLAN) {
	hs["vlan_id"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint16); ok {
			v.ID = uint16(x)
		}
	}
	hs["pcp"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint8); ok {
			v.PCP = uint8(x)
		}
	}
	hs["dei"] = func(e entry) {
		if x, ok := d.uinteger(e, 0, math.MaxUint8); ok {
			v.DEI = uint8(x)
		}
	}
	hs["ethertype"] = func(e entry) {
		if x, ok := d.uinteger(e, 1, math.MaxUint16); ok {
			v.EtherType = uint16(x)
		}
	}
}

// tunnelFields adds the tunnel keys to hs.
func (d *decoder) tunnelFields(hs map[string]handler, t *Tunnel) {
	u := func(lo, hi int64, set func(int64)) handler {
		return func(e entry) {
			if x, ok := d.uinteger(e, lo, hi); ok {
				set(x)
			}
		}
	}
	hs["tunnel_type"] = func(e entry) {
		if s, ok := d.str(e); ok {
			t.Type = TunnelType(s)
		}
	}
	hs["outer_eth_src"] = func(e entry) { t.OuterEthSrc, _ = d.mac(e) }
	hs["outer_eth_dst"] = func(e entry) { t.OuterEthDst, _ = d.mac(e) }
	hs["outer_ipv4_src"] = func(e entry) { t.OuterIPv4Src, _ = d.ipv4(e) }
	hs["outer_ipv4_dst"] = func(e entry) { t.OuterIPv4Dst, _ = d.ipv4(e) }
	hs["outer_ipv4_ttl"] = u(1, math.MaxUint8, func(x int64) { t.OuterTTL = uint8(x) })
	hs["outer_ipv4_tos"] = u(0, math.MaxUint8, func(x int64) { t.OuterTOS = uint8(x) })
	hs["vni"] = u(0, math.MaxUint32, func(x int64) { t.VNI = uint32(x) })
	hs["outer_udp_src"] = u(0, math.MaxUint16, func(x int64) { t.OuterUDPSrc = uint16(x) })
	hs["outer_udp_dst"] = u(1, math.MaxUint16, func(x int64) { t.OuterUDPDst = uint16(x) })
	hs["gre_protocol"] = u(1, math.MaxUint16, func(x int64) { t.GREProtocol = uint16(x) })
	hs["tni"] = u(0, math.MaxUint32, func(x int64) { t.TNI = uint32(x) })
	hs["flow_id"] = u(0, math.MaxUint8, func(x int64) { t.FlowID = uint8(x) })
}

// tunnelChecks requires a tunnel type and rejects fields of other tunnel types; got holds the
// keys of the map the tunnel fields were read from.
func (d *decoder) tunnelChecks(got map[string]entry, path string, t *Tunnel) {
	if got == nil {
		return
	}
	_, hasType := got["tunnel_type"]
	if _, ok := got["type"]; ok && strings.HasSuffix(path, ".tunnel") {
		if hasType {
			d.fail(got["tunnel_type"].path, "give the tunnel type as type or tunnel_type, not both")
		}
		hasType = true
	}
	if !hasType {
		key := "tunnel_type"
		if strings.HasSuffix(path, ".tunnel") {
			key = "type"
		}
		d.fail(joinPath(path, key), "a tunnel action needs the tunnel type (vxlan, gre or nvgre)")
		return
	}
	switch t.Type {
	case TunnelVXLAN, TunnelGRE, TunnelNVGRE:
	default:
		return // reported by validation
	}
	for k, only := range tunnelOnly {
		if e, ok := got[k]; ok && only != t.Type {
			d.fail(e.path, "%s is a %s field; this tunnel is %s", k, only, t.Type)
		}
	}
}

// match decodes a flow's match block.
func (d *decoder) match(me entry, m *Match) {
	port := func(dst *PortRange) handler {
		return func(e entry) {
			r, ok := d.portRange(e)
			if ok {
				*dst = r
			}
		}
	}
	var flex FlexMatch
	got := d.fields(me.v, me.path, "match", map[string]handler{
		"udp_src": port(&m.UDPSrc),
		"udp_dst": port(&m.UDPDst),
		"ipv4_len": func(e entry) {
			if v, ok := d.integer(e, 0, math.MaxUint16); ok {
				m.IPv4Len = uint16(v)
			}
		},
		"ipv4_src":     func(e entry) { m.IPv4Src, _ = d.ipv4(e) },
		"ipv4_dst":     func(e entry) { m.IPv4Dst, _ = d.ipv4(e) },
		"ipv6_src":     func(e entry) { m.IPv6Src, _ = d.ipv6(e) },
		"ipv6_dst":     func(e entry) { m.IPv6Dst, _ = d.ipv6(e) },
		"flex_item_id": uintInto(d, &flex.ItemID, 0, math.MaxUint16),
		"val":          uintInto(d, &flex.Value, 0, math.MaxUint32),
		"mask":         uintInto(d, &flex.Mask, 0, math.MaxUint32),
		"ecpri": func(e entry) {
			m.ECPRI = &ECPRIMatch{}
			d.ecpri(e, m.ECPRI)
		},
		"ethernet": func(e entry) {
			m.Ethernet = &EthernetMatch{}
			d.fields(e.v, e.path, "ethernet", map[string]handler{
				"src": func(e entry) { m.Ethernet.Src, _ = d.mac(e) },
				"dst": func(e entry) { m.Ethernet.Dst, _ = d.mac(e) },
			}, nil)
		},
	}, nil)
	if got == nil {
		return
	}
	_, hasFlex := got["flex_item_id"]
	_, hasVal := got["val"]
	_, hasMask := got["mask"]
	switch {
	case hasFlex:
		d.require(got, me.path, "a flex item match", "val", "mask")
		m.Flex = &flex
	case hasVal || hasMask:
		k := "val"
		if !hasVal {
			k = "mask"
		}
		d.fail(got[k].path, "%s belongs to a flex item match, which needs flex_item_id", k)
	}
}

// portRange decodes a UDP port (0 = any) or an inclusive range "lo-hi".
func (d *decoder) portRange(e entry) (PortRange, bool) {
	if e.v != nil && e.v.Kind == yaml.ScalarNode && e.v.Tag == "!!str" {
		s := strings.TrimSpace(e.v.Value)
		lo, hi, isRange := strings.Cut(s, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		if err1 != nil || err2 != nil {
			d.fail(e.path, "must be a UDP port or a range \"lo-hi\" of ports 0..65535, got %s", kindName(e.v))
			return PortRange{}, false
		}
		if a > b {
			d.fail(e.path, "port range %q is empty: %d > %d", s, a, b)
			return PortRange{}, false
		}
		return PortRange{uint16(a), uint16(b)}, true
	}
	v, ok := d.integer(e, 0, math.MaxUint16)
	if !ok {
		return PortRange{}, false
	}
	return PortRange{uint16(v), uint16(v)}, true
}

// ecpri decodes match.ecpri.
func (d *decoder) ecpri(e entry, m *ECPRIMatch) {
	id := func(e entry) {
		if m.PCID != nil {
			d.fail(e.path, "pc_id and rtc_id name the same field; give one of them")
			return
		}
		if v, ok := d.uinteger(e, 0, math.MaxUint16); ok {
			x := uint16(v)
			m.PCID = &x
		}
	}
	d.fields(e.v, e.path, "ecpri", map[string]handler{
		"msg_type": func(e entry) {
			if v, ok := d.uinteger(e, 0, math.MaxUint8); ok {
				x := uint8(v)
				m.MsgType = &x
			}
		},
		"pc_id":  id,
		"rtc_id": id,
	}, nil)
}

// flexItem decodes one rx.flex_items[] item.
func (d *decoder) flexItem(it entry, f *FlexItem) {
	got := d.fields(it.v, it.path, "a flex item", map[string]handler{
		"name":         func(e entry) { f.Name, _ = d.str(e) },
		"id":           intInto(d, &f.ID, 0, math.MaxUint16),
		"udp_dst_port": intInto(d, &f.UDPDstPort, 0, math.MaxUint16),
		"offset":       intInto(d, &f.Offset, 0, math.MaxUint16),
	}, nil)
	d.require(got, it.path, "a flex item", "name", "id", "udp_dst_port", "offset")
}

// reorder decodes one rx.reorder_configs[] item.
func (d *decoder) reorder(it entry, r *Reorder) {
	got := d.fields(it.v, it.path, "a reorder config", map[string]handler{
		"name": func(e entry) { r.Name, _ = d.str(e) },
		"reorder_type": func(e entry) {
			if s, ok := d.str(e); ok {
				r.Type = ReorderType(s)
			}
		},
		"memory_region":       func(e entry) { r.MemoryRegion, _ = d.str(e) },
		"payload_byte_offset": intInto(d, &r.PayloadByteOffset, 0, math.MaxUint32),
		"flow_ids": func(e entry) {
			items, ok := d.seq(e, "flow_ids")
			if !ok {
				return
			}
			if len(items) == 0 {
				d.fail(e.path, "flow_ids must list at least one flow id")
				return
			}
			r.FlowIDs = make([]int, 0, len(items))
			for _, x := range items {
				if v, ok := d.integer(x, 0, MaxFlowID); ok {
					r.FlowIDs = append(r.FlowIDs, int(v))
				}
			}
		},
		"method":     func(e entry) { d.method(e, &r.Method) },
		"data_types": func(e entry) { r.DataTypes = d.dataTypes(e) },
		"missing_action": func(e entry) {
			if s, ok := d.str(e); ok {
				r.MissingAction = MissingAction(s)
			}
		},
		"cyclic_sequence": func(e entry) {
			r.Cyclic = &CyclicSequence{}
			g := d.fields(e.v, e.path, "cyclic_sequence", map[string]handler{
				"epoch": func(e entry) { d.bitField(e, &r.Cyclic.Epoch) },
			}, nil)
			if g != nil {
				d.require(g, e.path, "cyclic_sequence", "epoch")
			}
		},
	}, nil)
	d.require(got, it.path, "a reorder config", "name", "reorder_type", "memory_region", "payload_byte_offset", "method")
}

// method decodes a reorder plan's method.
func (d *decoder) method(me entry, m *ReorderMethod) {
	got := d.fields(me.v, me.path, "method", map[string]handler{
		string(MethodSeqBatchNumber): func(e entry) {
			m.Kind = MethodSeqBatchNumber
			g := d.fields(e.v, e.path, string(MethodSeqBatchNumber), map[string]handler{
				"sequence_number": func(e entry) { d.bitField(e, &m.Seq) },
				"batch_number":    func(e entry) { d.bitField(e, &m.Batch) },
			}, nil)
			d.require(g, e.path, string(MethodSeqBatchNumber), "sequence_number", "batch_number")
		},
		string(MethodSeqPacketsPerBatch): func(e entry) {
			m.Kind = MethodSeqPacketsPerBatch
			g := d.fields(e.v, e.path, string(MethodSeqPacketsPerBatch), map[string]handler{
				"sequence_number":   func(e entry) { d.bitField(e, &m.Seq) },
				"packets_per_batch": intInto(d, &m.PacketsPerBatch, 1, math.MaxUint32),
			}, nil)
			d.require(g, e.path, string(MethodSeqPacketsPerBatch), "sequence_number", "packets_per_batch")
		},
	}, nil)
	if got == nil {
		return
	}
	_, a := got[string(MethodSeqBatchNumber)]
	_, b := got[string(MethodSeqPacketsPerBatch)]
	switch {
	case a && b:
		d.fail(me.path, "method has either seq_batch_number or seq_packets_per_batch, not both")
	case !a && !b:
		d.fail(me.path, "method needs seq_batch_number or seq_packets_per_batch")
	}
}

// bitField decodes {bit_offset, bit_width}.
func (d *decoder) bitField(e entry, f *BitField) {
	g := d.fields(e.v, e.path, "a bit field", map[string]handler{
		"bit_offset": intInto(d, &f.Offset, 0, math.MaxUint16),
		"bit_width":  intInto(d, &f.Width, 0, math.MaxUint8),
	}, nil)
	d.require(g, e.path, "a bit field", "bit_offset", "bit_width")
}

// dataTypes decodes a reorder plan's data_types.
func (d *decoder) dataTypes(e entry) *DataTypes {
	dt := &DataTypes{Endianness: EndianHost}
	str := func(set func(string)) handler {
		return func(e entry) {
			if s, ok := d.str(e); ok {
				set(s)
			}
		}
	}
	in := str(func(s string) { dt.Input = DataType(s) })
	out := str(func(s string) { dt.Output = DataType(s) })
	end := str(func(s string) { dt.Endianness = Endianness(s) })
	got := d.fields(e.v, e.path, "data_types", map[string]handler{
		"input_type": in, "input": in,
		"output_type": out, "output": out,
		"endianness": end, "input_endianness": end,
	}, nil)
	if got == nil {
		return dt
	}
	for _, pair := range [][2]string{{"input_type", "input"}, {"output_type", "output"}, {"endianness", "input_endianness"}} {
		_, a := got[pair[0]]
		b, hasB := got[pair[1]]
		if a && hasB {
			d.fail(b.path, "%s and %s name the same field; give one of them", pair[0], pair[1])
		}
		if !a && !hasB && pair[0] != "endianness" {
			d.fail(joinPath(e.path, pair[0]), "data_types needs %s", pair[0])
		}
	}
	return dt
}
