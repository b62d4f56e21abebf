package config

// Typed access to yaml.Node trees: every helper records the position of the keys it walks and
// reports type errors against the key path, so the schema walk in decode.go reads like the
// schema itself.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds how many nodes one document may expand to through aliases, so that a small
// hostile document ("billion laughs") cannot make the loader run for ever.
const maxNodes = 100_000

// decoder walks one YAML document into a Config.
type decoder struct {
	c      *Config
	src    *source
	errs   Errors
	visits int
	tooBig bool
	failed []string // paths whose decoding failed: validation errors under them are noise
	legacy []legacyEndpoint
}

// legacyEndpoint is a socket endpoint given as local_ip/local_port (or remote_*): it has no
// scheme, so its protocol is inferred from the URIs of the whole configuration afterwards.
type legacyEndpoint struct {
	ep   *Endpoint
	path string
}

// entry is one key: value pair of a YAML map.
type entry struct {
	key  string
	k, v *yaml.Node // v is alias-resolved
	path string
}

// maxErrors bounds the errors one document may produce; past it decoding stops.
const maxErrors = 200

// fail records an error for path and marks the path as failed.
func (d *decoder) fail(path, format string, args ...any) {
	d.record(d.c.Errorf(path, format, args...))
}

// failAt records an error at an explicit node position (for nodes that have no key path).
func (d *decoder) failAt(n *yaml.Node, path, format string, args ...any) {
	e := &Error{File: d.src.name, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.record(e)
}

func (d *decoder) record(e *Error) {
	if d.tooBig {
		return
	}
	d.failed = append(d.failed, e.Path)
	if len(d.errs) >= maxErrors {
		d.tooBig = true
		d.errs = append(d.errs, &Error{File: d.src.name, Msg: fmt.Sprintf("too many errors (more than %d); stopped", maxErrors)})
		return
	}
	d.errs = append(d.errs, e)
}

// mark records the position of a key path.
func (d *decoder) mark(path string, n *yaml.Node) {
	if _, ok := d.src.pos[path]; !ok && n != nil {
		d.src.pos[path] = pos{n.Line, n.Column}
	}
}

// resolve follows aliases and counts the node against the expansion budget.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	d.visits++
	if d.visits > maxNodes && !d.tooBig {
		d.failAt(n, "", "document expands to more than %d nodes through aliases", maxNodes)
		d.tooBig = true
	}
	return n
}

// kindName describes a node for "must be X, got Y" messages.
func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "no value"
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "an unsupported node"
}

// mapping lists the entries of a map node, resolving aliases and `<<` merge keys, recording
// each key's position and rejecting duplicate or non-scalar keys.
func (d *decoder) mapping(n *yaml.Node, path, what string) ([]entry, bool) {
	if d.tooBig {
		return nil, false
	}
	if n == nil || n.Kind != yaml.MappingNode {
		d.fail(path, "%s must be a map, got %s", what, kindName(n))
		return nil, false
	}
	var out, merged []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], d.resolve(n.Content[i+1])
		if d.tooBig {
			return nil, false
		}
		if k.Kind == yaml.AliasNode {
			k = d.resolve(k)
		}
		if k == nil || k.Kind != yaml.ScalarNode {
			d.failAt(k, path, "map keys must be plain strings, got %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			merged = append(merged, d.mergeEntries(v, path, what)...)
			continue
		}
		p := joinPath(path, k.Value)
		if seen[k.Value] {
			d.failAt(k, p, "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		d.mark(p, k)
		out = append(out, entry{key: k.Value, k: k, v: v, path: p})
	}
	for _, e := range merged {
		if !seen[e.key] {
			seen[e.key] = true
			d.mark(e.path, e.k)
			out = append(out, e)
		}
	}
	return out, true
}

// mergeEntries expands the value of a `<<` key: a map or a list of maps.
func (d *decoder) mergeEntries(v *yaml.Node, path, what string) []entry {
	var srcs []*yaml.Node
	if v != nil && v.Kind == yaml.SequenceNode {
		for _, it := range v.Content {
			srcs = append(srcs, d.resolve(it))
		}
	} else {
		srcs = []*yaml.Node{v}
	}
	var out []entry
	for _, s := range srcs {
		es, ok := d.mapping(s, path, "a merged value (<<)")
		if !ok {
			continue
		}
		out = append(out, es...)
	}
	return out
}

// handler decodes the value of one known key.
type handler func(e entry)

// fields dispatches the entries of a map to the handlers of its known keys. Unknown keys are
// errors that list the valid ones; legacy keys get their migration message. It returns the
// entries by key so that callers can check required and mutually exclusive keys.
func (d *decoder) fields(n *yaml.Node, path, what string, hs map[string]handler, legacy map[string]string) map[string]entry {
	es, ok := d.mapping(n, path, what)
	if !ok {
		return nil
	}
	got := make(map[string]entry, len(es))
	for _, e := range es {
		if msg, ok := legacy[e.key]; ok {
			d.fail(e.path, "%s", msg)
			continue
		}
		h, ok := hs[e.key]
		if !ok {
			d.fail(e.path, "unknown key %q in %s%s", e.key, what, suggest(e.key, hs))
			continue
		}
		got[e.key] = e
		h(e)
	}
	return got
}

// require reports each missing required key at the map that should hold it.
func (d *decoder) require(got map[string]entry, path, what string, keys ...string) {
	if got == nil {
		return
	}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			d.fail(joinPath(path, k), "%s needs %s", what, k)
		}
	}
}

// suggest names the closest valid key, or lists them all.
func suggest(key string, hs map[string]handler) string {
	names := make([]string, 0, len(hs))
	for k := range hs {
		names = append(names, k)
	}
	sort.Strings(names)
	best, bestD := "", 1<<30
	for _, k := range names {
		if dd := editDistance(key, k); dd < bestD {
			best, bestD = k, dd
		}
	}
	if best != "" && bestD <= max(2, len(key)/4) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (valid keys: %s)", strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance, for "did you mean" hints.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// scalar returns the text of a non-null scalar.
func (d *decoder) scalar(e entry, want string) (string, bool) {
	if e.v == nil || e.v.Kind != yaml.ScalarNode || e.v.Tag == "!!null" {
		d.fail(e.path, "must be %s, got %s", want, kindName(e.v))
		return "", false
	}
	return e.v.Value, true
}

// str decodes a string. Any scalar is accepted, as yaml-cpp does (`name: 7` is "7").
func (d *decoder) str(e entry) (string, bool) { return d.scalar(e, "a string") }

// isPlaceholder reports whether s is an upstream-style template value such as <0000:00:00.0>.
func isPlaceholder(s string) bool {
	return len(s) >= 2 && s[0] == '<' && s[len(s)-1] == '>'
}

// placeholder reports whether the value of e is a `<...>` template; if so it is recorded in
// Config.Placeholders and the caller leaves the typed field zero.
func (d *decoder) placeholder(e entry) bool {
	if e.v == nil || e.v.Kind != yaml.ScalarNode || !isPlaceholder(e.v.Value) {
		return false
	}
	for _, p := range d.c.Placeholders {
		if p == e.path {
			return true
		}
	}
	d.c.Placeholders = append(d.c.Placeholders, e.path)
	return true
}

// integer decodes a YAML integer (decimal, 0x hex, 0o octal, 0b binary) in [lo, hi]. Strings
// are rejected, even numeric ones: quoting a number is most often a mistake.
func (d *decoder) integer(e entry, lo, hi int64) (int64, bool) {
	if e.v != nil && e.v.Kind == yaml.ScalarNode && e.v.Tag == "!!float" && bigInteger.MatchString(e.v.Value) {
		// The YAML library types integers beyond 64 bits as floats.
		d.outOfRange(e, strings.HasPrefix(e.v.Value, "-"), e.v.Value, lo, hi)
		return 0, false
	}
	if e.v == nil || e.v.Kind != yaml.ScalarNode || e.v.Tag != "!!int" {
		d.fail(e.path, "must be an integer, got %s", kindName(e.v))
		return 0, false
	}
	var v int64
	if err := e.v.Decode(&v); err != nil {
		// Beyond 64 bits: report the value as written, not a clamped one.
		d.outOfRange(e, strings.HasPrefix(strings.TrimSpace(e.v.Value), "-"), e.v.Value, lo, hi)
		return 0, false
	}
	return d.inRange(e, v, lo, hi)
}

// bigInteger is a plain decimal integer, which the YAML library reads as a float when it does
// not fit 64 bits.
var bigInteger = regexp.MustCompile(`^[-+]?[0-9]+$`)

// inRange checks lo ≤ v ≤ hi.
func (d *decoder) inRange(e entry, v, lo, hi int64) (int64, bool) {
	if v < lo || v > hi {
		d.outOfRange(e, v < lo, strconv.FormatInt(v, 10), lo, hi)
		return 0, false
	}
	return v, true
}

// outOfRange reports a value outside [lo, hi], naming the bound it crossed. A bound at the
// limit of a machine type (below MinInt32 or above MaxInt32) is a representation limit, not a
// schema rule, so it is only named when it is the one crossed.
func (d *decoder) outOfRange(e entry, below bool, written string, lo, hi int64) {
	loOpen, hiOpen := lo <= math.MinInt32, hi == math.MaxInt32 || hi == math.MaxInt64
	switch {
	case below && (hiOpen || loOpen):
		d.fail(e.path, "must be ≥ %d, got %s", lo, written)
	case !below && (loOpen || hiOpen):
		d.fail(e.path, "must be ≤ %d, got %s", hi, written)
	default:
		d.fail(e.path, "must be between %d and %d, got %s", lo, hi, written)
	}
}

// uinteger decodes an integer the way upstream decodes flow-action fields (strtoull base 0):
// a YAML integer or a string holding one, decimal, 0x hex or leading-0 octal, in [lo, hi].
func (d *decoder) uinteger(e entry, lo, hi int64) (int64, bool) {
	if e.v == nil || e.v.Kind != yaml.ScalarNode || (e.v.Tag != "!!int" && e.v.Tag != "!!str") {
		d.fail(e.path, "must be an integer, got %s", kindName(e.v))
		return 0, false
	}
	if e.v.Tag == "!!int" {
		return d.integer(e, lo, hi)
	}
	text := strings.TrimSpace(e.v.Value)
	u, err := strconv.ParseUint(text, 0, 64)
	if errors.Is(err, strconv.ErrRange) {
		d.outOfRange(e, false, text, lo, hi)
		return 0, false
	}
	if err != nil {
		d.fail(e.path, "must be an integer, got %s", kindName(e.v))
		return 0, false
	}
	if u > uint64(hi) {
		d.outOfRange(e, false, text, lo, hi)
		return 0, false
	}
	return d.inRange(e, int64(u), lo, hi)
}

// boolean decodes true/false; yes/no/on/off/y/n are accepted as yaml-cpp does.
func (d *decoder) boolean(e entry) (bool, bool) {
	if e.v != nil && e.v.Kind == yaml.ScalarNode {
		if e.v.Tag == "!!bool" {
			var b bool
			if err := e.v.Decode(&b); err == nil {
				return b, true
			}
		}
		if e.v.Tag == "!!str" {
			switch strings.ToLower(e.v.Value) {
			case "true", "yes", "y", "on":
				return true, true
			case "false", "no", "n", "off":
				return false, true
			}
		}
	}
	d.fail(e.path, "must be true or false, got %s", kindName(e.v))
	return false, false
}

// seq lists the items of a sequence, recording each item's position as path[i].
func (d *decoder) seq(e entry, what string) ([]entry, bool) {
	if d.tooBig {
		return nil, false
	}
	if e.v == nil || e.v.Kind != yaml.SequenceNode {
		d.fail(e.path, "%s must be a list, got %s", what, kindName(e.v))
		return nil, false
	}
	out := make([]entry, 0, len(e.v.Content))
	for i, it := range e.v.Content {
		p := indexPath(e.path, i)
		d.mark(p, it)
		r := d.resolve(it)
		if d.tooBig {
			return nil, false
		}
		out = append(out, entry{key: e.key, k: it, v: r, path: p})
	}
	return out, true
}

// strList decodes a list of strings.
func (d *decoder) strList(e entry, what string) ([]string, bool) {
	items, ok := d.seq(e, what)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for _, it := range items {
		s, ok := d.str(it)
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

// ipv4 decodes a dotted IPv4 address; a placeholder leaves it invalid (zero).
func (d *decoder) ipv4(e entry) (netip.Addr, bool) {
	if d.placeholder(e) {
		return netip.Addr{}, true
	}
	s, ok := d.str(e)
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		d.fail(e.path, "%q is not an IPv4 address", s)
		return netip.Addr{}, false
	}
	return a, true
}

// ipv6 decodes an IPv6 address (not an IPv4-mapped one); a placeholder leaves it invalid.
func (d *decoder) ipv6(e entry) (netip.Addr, bool) {
	if d.placeholder(e) {
		return netip.Addr{}, true
	}
	s, ok := d.str(e)
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		d.fail(e.path, "%q is not an IPv6 address", s)
		return netip.Addr{}, false
	}
	return a, true
}

// mac decodes a 48-bit MAC address; a placeholder leaves it nil.
func (d *decoder) mac(e entry) (net.HardwareAddr, bool) {
	if d.placeholder(e) {
		return nil, true
	}
	s, ok := d.str(e)
	if !ok {
		return nil, false
	}
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != 6 {
		d.fail(e.path, "%q is not a MAC address (aa:bb:cc:dd:ee:ff)", s)
		return nil, false
	}
	return m, true
}

// intInto is the handler of a key whose value is an integer in [lo, hi], stored in *dst.
func intInto[T ~int | ~uint8 | ~uint16 | ~uint32](d *decoder, dst *T, lo, hi int64) handler {
	return func(e entry) {
		if v, ok := d.integer(e, lo, hi); ok {
			*dst = T(v)
		}
	}
}

// uintInto is intInto for keys that also take hexadecimal strings (uinteger).
func uintInto[T ~int | ~uint8 | ~uint16 | ~uint32](d *decoder, dst *T, lo, hi int64) handler {
	return func(e entry) {
		if v, ok := d.uinteger(e, lo, hi); ok {
			*dst = T(v)
		}
	}
}
