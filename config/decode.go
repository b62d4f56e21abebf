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
