package osthread_test

import (
	"testing"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

// TestPauseCode: Pause is the CPU's spin-wait hint on both architectures the library ships
// for, first instruction of its body: PAUSE (F3 90) on amd64, YIELD (0xd503203f, Arm ARM
// hint instructions) on arm64.
func TestPauseCode(t *testing.T) {
	const sym = "github.com/daqiri-go/daqiri/internal/osthread.Pause"
	for arch, want := range map[string]string{"amd64": "f390", "arm64": "d503203f"} {
		archives := testutil.ExportArchives(t, arch, "./internal/osthread")
		code := testutil.Disassemble(t, archives["github.com/daqiri-go/daqiri/internal/osthread"], "^"+sym+"$")[sym]
		if len(code) == 0 || code[0].Hex != want {
			t.Errorf("%s: Pause is %v, want it to start with %s", arch, code, want)
		}
	}
}
