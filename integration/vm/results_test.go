package vm

import (
	"strings"
	"testing"
	"time"
)

func TestParseEvents(t *testing.T) {
	// Events as `go tool test2json` writes them; TestC started but never
	// ended (the guest died).
	const js = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: hello\n"}
{"Action":"run","Package":"p","Test":"TestA/sub_one"}
{"Action":"output","Package":"p","Test":"TestA/sub_one","Output":"    a_test.go:4: in sub\n"}
{"Action":"pass","Package":"p","Test":"TestA/sub_one","Elapsed":0.25}
{"Action":"run","Package":"p","Test":"TestA/sub_one/deep"}
{"Action":"skip","Package":"p","Test":"TestA/sub_one/deep","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestA/x/y"}
{"Action":"fail","Package":"p","Test":"TestA/x/y","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (1.50s)\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":1.5}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"panic: boom\n"}
{"Action":"fail","Package":"p","Elapsed":2}
`
	tests, out, res, err := parseEvents(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if res != Fail || out != "panic: boom\n" {
		t.Errorf("package: result %q output %q", res, out)
	}
	if len(tests) != 2 || tests[0].Name != "TestA" || tests[1].Name != "TestC" {
		t.Fatalf("top-level tests: %+v", tests)
	}
	a := tests[0]
	if a.Result != Fail || a.Elapsed != 1500*time.Millisecond || a.Output != "    a_test.go:3: hello\n" {
		t.Errorf("TestA: %q %v %q", a.Result, a.Elapsed, a.Output)
	}
	if len(a.Children) != 2 {
		t.Fatalf("TestA children: %d", len(a.Children))
	}
	sub := a.Children[0]
	if sub.Leaf() != "sub_one" || sub.Result != Pass || len(sub.Children) != 1 || sub.Children[0].Leaf() != "deep" || sub.Children[0].Result != Skip {
		t.Errorf("TestA/sub_one: %+v", sub)
	}
	// TestA/x never ran as a test of its own: x/y hangs under TestA.
	if xy := a.Children[1]; xy.Leaf() != "x/y" || xy.Result != Fail {
		t.Errorf("TestA/x/y: leaf %q result %q", xy.Leaf(), xy.Result)
	}
	if tests[1].Result != NoResult {
		t.Errorf("TestC: result %q, want none", tests[1].Result)
	}
	n := countResults(tests)
	if n[Pass] != 1 || n[Fail] != 2 || n[Skip] != 1 || n[NoResult] != 1 {
		t.Errorf("counts %v", n)
	}
}

func TestParseEventsBadInput(t *testing.T) {
	if _, _, _, err := parseEvents(strings.NewReader(`{"Action":"run","Test":"T"}` + "\nnot json\n")); err == nil {
		t.Error("garbage accepted")
	}
	tests, _, res, err := parseEvents(strings.NewReader(""))
	if err != nil || len(tests) != 0 || res != NoResult {
		t.Errorf("empty input: %v %v %q", tests, err, res)
	}
}

func TestTailLines(t *testing.T) {
	if got := tailLines([]byte("a\nb\nc\nd\n"), 2); got != "c\nd" {
		t.Errorf("tailLines = %q", got)
	}
	if got := tailLines(nil, 3); got != "" {
		t.Errorf("tailLines(nil) = %q", got)
	}
}

func TestFindHostNamesWhatIsMissing(t *testing.T) {
	t.Setenv(EnvQEMU, "/nonexistent/qemu")
	t.Setenv(EnvKernel, "/nonexistent/vmlinuz-9.9.9")
	_, err := FindHost()
	me, ok := err.(*MissingError)
	if !ok {
		t.Fatalf("FindHost = %v, want a *MissingError", err)
	}
	msg := me.Error()
	for _, want := range []string{EnvQEMU + "=/nonexistent/qemu", "/nonexistent/vmlinuz-9.9.9", "apt-get install", "qemu-system-x86"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
