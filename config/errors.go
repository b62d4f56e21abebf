package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Error is one configuration problem: the key path it concerns and, for YAML input, where that
// key is in the file.
type Error struct {
	File   string // file name given to Parse or LoadFile; "" for configs built in code
	Line   int    // 1-based line of the key; 0 when unknown
	Column int    // 1-based column of the key; 0 when unknown
	Path   string // key path such as "interfaces[1].rx.queues[0].batch_size"; "" for the whole config
	Msg    string // what is wrong, without the path

	cause error // underlying error (for example fs.ErrNotExist from LoadFile), if any
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.cause }

// Error formats the error as "file:line:col: path: msg", leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one configuration, sorted by position in the file. Parse,
// LoadFile and Validate return it as their error, so all problems are reported at once.
type Errors []*Error

// Error lists every problem, one per line.
func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d configuration errors:", len(es))
	for _, e := range es {
		b.WriteString("\n\t" + e.Error())
	}
	return b.String()
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AsErrors extracts the configuration errors carried by err (an Errors list, a single *Error,
// or errors wrapping them); nil when err carries none.
func AsErrors(err error) Errors {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}
	}
	return nil
}

// sortErrors orders errors by position (errors without a position keep their relative order
// after the positioned ones) and drops exact duplicates, which arise when the same key is
// reached twice through a YAML alias.
func sortErrors(es Errors) Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	out := es[:0]
	seen := map[Error]bool{}
	for _, e := range es {
		if seen[*e] {
			continue
		}
		seen[*e] = true
		out = append(out, e)
	}
	return out
}

// Errorf makes an error for the key at path (for example "interfaces[0].address"), formatted
// like fmt.Sprintf. For a configuration loaded from YAML the error carries the file, line and
// column of that key, or of its nearest parent that appears in the file when the key itself
// does not (a missing required key points at the map that should hold it). Engines use it for
// errors found at Open so that those, too, point into the user's file.
//
// A %w verb wraps its argument as with fmt.Errorf, so errors.Is and errors.As see through.
func (c *Config) Errorf(path string, format string, args ...any) *Error {
	f := fmt.Errorf(format, args...)
	e := &Error{Path: path, Msg: f.Error()}
	switch f.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.cause = f
	}
	if c == nil || c.src == nil {
		return e
	}
	e.File = c.src.name
	if p, ok := c.src.lookup(path); ok {
		e.Line, e.Column = p.line, p.col
	}
	return e
}

// lookup finds the position of path or of its nearest recorded parent.
func (s *source) lookup(path string) (pos, bool) {
	for {
		if p, ok := s.pos[path]; ok {
			return p, true
		}
		if path == "" {
			return pos{}, false
		}
		path = parentPath(path)
	}
}

// has reports whether path itself was written in the YAML input.
func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.pos[path]
	return ok
}

// parentPath drops the last element of a key path: "a.b[2].c" → "a.b[2]" → "a.b" → "a" → "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// underPath reports whether p is base or lies below it.
func underPath(p, base string) bool {
	if base == "" || p == base {
		return true
	}
	return strings.HasPrefix(p, base) && (p[len(base)] == '.' || p[len(base)] == '[')
}

// joinPath appends a key to a path.
func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// indexPath appends a list index to a path.
func indexPath(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }
