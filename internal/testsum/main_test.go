package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummarize (issue 19 item 17): skipped tests are listed with their reasons; failures
// keep their output and the exit status.
func TestSummarize(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: needs root (CAP_NET_ADMIN)\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Elapsed":0.5}
{"Action":"pass","Package":"q","Elapsed":1}
`
	var out bytes.Buffer
	if rc := summarize(strings.NewReader(in), &out); rc != 1 {
		t.Errorf("rc %d, want 1", rc)
	}
	for _, want := range []string{"SKIP p TestA: needs root (CAP_NET_ADMIN)", "--- FAIL p TestB\n    b_test.go:3: boom", "FAIL p 0.5s", "ok   q 1.0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if rc := summarize(strings.NewReader(`{"Action":"pass","Package":"q","Elapsed":1}`+"\n"), &out); rc != 0 {
		t.Errorf("all passed: rc %d", rc)
	}
}
