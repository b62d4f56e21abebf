package daqiri

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibraryLinksNoModel (issue 26): the library and the mlx5 driver — the engine, its
// channel transports, the PRM vocabulary — import no package of the ConnectX device model,
// directly or through another package, so the code a ConnectX runs is the code under test
// and importing the library links no simulator. Programs that want model ports wire
// mlx5/model/modelch in themselves (WithMLX5Fabric). The failure names the import chain.
func TestLibraryLinksNoModel(t *testing.T) {
	const module = "github.com/daqiri-go/daqiri"
	roots := []string{".", "mlx5", "mlx5/channel", "mlx5/channel/devx", "mlx5/channel/vfioch",
		"mlx5/channel/trace", "mlx5/prm", "mlx5/gpunetio", "flow/mlx5", "verbs", "verbs/mlx5dv"}
	forbidden := func(rel string) bool { return rel == "mlx5/model" || strings.HasPrefix(rel, "mlx5/model/") }
	// via records how each package was reached, for the chain in the message.
	via := map[string]string{}
	var walk func(rel string)
	walk = func(rel string) {
		pkg, err := build.Default.ImportDir(filepath.FromSlash(rel), 0)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, imp := range pkg.Imports {
			r, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if _, seen := via[r]; seen {
				continue
			}
			via[r] = rel
			if forbidden(r) {
				chain := []string{r}
				for p := rel; p != "."; p = via[p] {
					chain = append(chain, p)
					if via[p] == "" {
						break
					}
				}
				chain = append(chain, "(root)")
				t.Errorf("the library imports the device model: %s", strings.Join(chain, " ← "))
				continue
			}
			walk(r)
		}
	}
	for _, r := range roots {
		if _, seen := via[r]; !seen {
			via[r] = "."
			walk(r)
		}
	}
	if len(via) < 20 {
		t.Fatalf("walked only %d packages: the walk is broken", len(via))
	}
}
