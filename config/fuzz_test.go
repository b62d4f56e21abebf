package config_test

import (
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"go.yaml.in/yaml/v3"
)

// FuzzParse: Parse never panics; whatever it accepts validates, resolves an engine for every
// interface, points every placeholder at a line and survives an encode/parse round trip.
// The seed corpus (testdata/fuzz/FuzzParse) holds the upstream examples and broken variants.
func FuzzParse(f *testing.F) {
	for _, s := range []string{rawBase, sockBase, roceBase} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, "fuzz.yaml")
		if err != nil {
			if c != nil {
				t.Fatalf("config returned with error %v", err)
			}
			es := config.AsErrors(err)
			if len(es) == 0 {
				t.Fatalf("error is not a config error: %v", err)
			}
			for _, e := range es {
				if e.Msg == "" || e.File != "fuzz.yaml" {
					t.Fatalf("malformed error %+v", e)
				}
			}
			_ = err.Error()
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate rejects: %v\n%s", err, data)
		}
		for i := range c.Interfaces {
			if _, err := c.ResolveEngine(i); err != nil {
				t.Fatalf("ResolveEngine(%d) after a successful Parse: %v", i, err)
			}
		}
		for _, p := range c.Placeholders {
			if e := c.Errorf(p, "x"); e.Line == 0 {
				t.Fatalf("placeholder %s has no line", p)
			}
		}
		for _, name := range c.AppNames() {
			var v any
			_ = c.App(name, &v)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		c2, err := config.Parse(out, "re")
		if err != nil {
			t.Fatalf("re-parse of the encoded config: %v\n--- input\n%s\n--- encoded\n%s", err, data, out)
		}
		if !sameConfig(c, c2) {
			o2, _ := yaml.Marshal(c2)
			t.Fatalf("round trip changed the config:\n--- encoded\n%s\n--- re-encoded\n%s", out, o2)
		}
		if strings.Count(string(out), "<placeholder>") != len(c.Placeholders) {
			t.Fatalf("placeholders %v not all encoded:\n%s", c.Placeholders, out)
		}
	})
}
