package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AppNames lists the application sections of the document — the top-level keys beside
// `daqiri` (for example bench_rx, bench_tx, socket_bench_server) — in document order. A bare
// config map or a Config built in code has none.
func (c *Config) AppNames() []string {
	if c == nil || c.src == nil {
		return nil
	}
	return slices.Clone(c.src.apps)
}

// App decodes the application section name into v, which must be a non-nil pointer, with the
// YAML library's rules (yaml struct tags) and strictly: a key in the section that v's type
// does not have is an error, reported with its line like every other configuration error.
func (c *Config) App(name string, v any) (err error) {
	if c == nil || c.src == nil || !slices.Contains(c.src.apps, name) {
		var have []string
		if c != nil && c.src != nil {
			have = c.src.apps
		}
		return &Error{Path: name, Msg: fmt.Sprintf("no application section %q in the configuration (sections: %s)", name, strings.Join(have, ", "))}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: App(%q): need a non-nil pointer, got %T", name, v)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("config: App(%q) into %T: %v", name, v, r)
		}
	}()
	// Strict decoding needs the YAML library's Decoder (Node.Decode cannot be made strict), and
	// that reads bytes; decoding the whole original document into a struct with one field per
	// top-level key keeps every line number true.
	keys := append([]string{"daqiri"}, c.src.apps...)
	for _, k := range keys {
		if k == "" || k == "-" || strings.ContainsAny(k, ",\"\\`") {
			return c.appLoose(name, v)
		}
	}
	fields := make([]reflect.StructField, len(keys))
	target := 0
	for i, k := range keys {
		t := reflect.TypeFor[yaml.Node]()
		if k == name {
			t, target = rv.Type().Elem(), i
		}
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(`yaml:"` + k + `"`)}
	}
	doc := reflect.New(reflect.StructOf(fields))
	dec := yaml.NewDecoder(bytes.NewReader(c.src.data))
	dec.KnownFields(true)
	if err := dec.Decode(doc.Interface()); err != nil {
		return c.appError(name, err)
	}
	rv.Elem().Set(doc.Elem().Field(target))
	return nil
}

// appLoose decodes a section whose name cannot be a struct tag, without the unknown-key check.
func (c *Config) appLoose(name string, v any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(c.src.data, &root); err != nil || len(root.Content) == 0 {
		return &Error{File: c.src.name, Path: name, Msg: "cannot re-read the document"}
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			if err := m.Content[i+1].Decode(v); err != nil {
				return c.appError(name, err)
			}
			return nil
		}
	}
	return &Error{File: c.src.name, Path: name, Msg: "section not found"}
}

// typeErrLine matches one entry of a yaml.TypeError.
var typeErrLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// appError converts YAML library errors into positioned configuration errors.
func (c *Config) appError(name string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &Error{File: c.src.name, Path: name, Msg: strings.TrimPrefix(err.Error(), "yaml: "), cause: err}
	}
	var es Errors
	for _, s := range te.Errors {
		e := &Error{File: c.src.name, Path: name, Msg: s}
		if m := typeErrLine.FindStringSubmatch(s); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		es = append(es, e)
	}
	return es
}
