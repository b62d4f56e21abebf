package vm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// moduleTree is a kernel's module index: /lib/modules/<release>/modules.dep
// (one "path: dep dep …" line per loadable module, paths relative to the
// tree) and modules.builtin (one path per module compiled into the kernel).
// Format: kmod's depmod(8) man page.
type moduleTree struct {
	dir     string
	deps    map[string][]string // module name → dependency names
	path    map[string]string   // module name → file, relative to dir
	builtin map[string]bool
}

// moduleName turns a module file or user-supplied name into the canonical
// name modprobe uses: base name without .ko and compression suffix, with '-'
// folded into '_'.
func moduleName(s string) string {
	s = filepath.Base(s)
	for _, suf := range []string{".xz", ".zst", ".gz"} {
		s = strings.TrimSuffix(s, suf)
	}
	s = strings.TrimSuffix(s, ".ko")
	return strings.ReplaceAll(s, "-", "_")
}

func loadModuleTree(dir string) (*moduleTree, error) {
	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("kernel module index: %w", err)
	}
	mt, err := parseModuleTree(dir, dep, nil)
	if err != nil {
		return nil, err
	}
	// modules.builtin may legitimately be absent (a kernel with no built-in
	// modules); treat that as empty.
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			mt.builtin[moduleName(l)] = true
		}
	}
	return mt, nil
}

func parseModuleTree(dir string, dep, builtin []byte) (*moduleTree, error) {
	mt := &moduleTree{dir: dir, deps: map[string][]string{}, path: map[string]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(dep))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		file, rest, ok := strings.Cut(line, ":")
		if !ok || file == "" {
			return nil, fmt.Errorf("modules.dep line %d: no \"module:\" prefix in %q", n, line)
		}
		name := moduleName(file)
		mt.path[name] = file
		for _, d := range strings.Fields(rest) {
			mt.deps[name] = append(mt.deps[name], moduleName(d))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("modules.dep: %w", err)
	}
	for _, l := range strings.Fields(string(builtin)) {
		mt.builtin[moduleName(l)] = true
	}
	return mt, nil
}

// loadOrder returns the module files (relative to the tree) to insmod, in an
// order where every module follows its dependencies; built-in modules are
// left out. A name that is neither a module nor built in is an error.
func (mt *moduleTree) loadOrder(names ...string) ([]string, error) {
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle through %s", name)
		case 2:
			return nil
		}
		if mt.builtin[name] {
			state[name] = 2
			return nil
		}
		file, ok := mt.path[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) is not in %s/modules.dep", name, from, mt.dir)
			}
			return fmt.Errorf("module %s is not in %s/modules.dep nor built in", name, mt.dir)
		}
		state[name] = 1
		for _, d := range mt.deps[name] {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, file)
		return nil
	}
	for _, n := range names {
		if err := visit(moduleName(n), ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}
