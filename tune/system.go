package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// System is the machine being checked: a filesystem root holding sys/, proc/ and dev/, and
// a source of GPU facts. The zero value is not usable; build one with NewSystem or fill the
// fields (tests point Root at a fixture tree and GPU at a fake).
type System struct {
	// Root is the directory that stands for "/" ("/" on a live machine). Every sysfs,
	// procfs and /dev path is read below it.
	Root string

	// GPU gives GPU facts. nil means none are available (no driver): checks that need them
	// report "no NVIDIA GPU" or skip.
	GPU GPUSource

	// Euid returns the effective user id; nil means os.Geteuid. set mrrs refuses unless 0.
	Euid func() int

	// OpenConfig opens a PCI config space file for reading and writing (set mrrs); nil
	// means os.OpenFile. Tests replace it to simulate writes that do not stick.
	OpenConfig func(path string) (ConfigFile, error)

	// SchematicOutput is where the schematic check writes its SVG picture of the PCIe tree
	// (a path relative to the working directory, not to Root); "" writes nothing and the
	// check only reports the GPU↔I/O paths. `check all` leaves it empty unless asked, so
	// that a routine run never drops files in the working directory.
	SchematicOutput string
	// SchematicNamed says the user named SchematicOutput (--schematic-output): a symbolic
	// link there is written through, as with any path a user names (/dev/stdout is one).
	// The default name is never followed: a link planted in the working directory must not
	// redirect the write to another file.
	SchematicNamed bool

	gpuOnce  sync.Once
	gpuCache GPUFacts
	gpuErr   error
}

// ConfigFile is an open PCI configuration space file.
type ConfigFile interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Close() error
}

// NewSystem returns the live machine: root "/" and GPU facts from NVML, the CUDA driver or
// nvidia-smi, whichever is present.
func NewSystem() *System { return &System{Root: "/", GPU: AutoGPUSource()} }

// path maps an absolute machine path to the file under Root.
func (s *System) path(p string) string {
	if s.Root == "" || s.Root == "/" {
		return p
	}
	return filepath.Join(s.Root, p)
}

// rel maps a file under Root back to the machine path it stands for (for messages).
func (s *System) rel(p string) string {
	if s.Root == "" || s.Root == "/" {
		return p
	}
	r, err := filepath.Rel(s.Root, p)
	if err != nil || strings.HasPrefix(r, "..") {
		return p
	}
	return "/" + r
}

// readString reads a small text file and trims surrounding white space.
func (s *System) readString(p string) (string, error) {
	b, err := os.ReadFile(s.path(p))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readInt reads a file holding one integer (decimal, or hex with 0x).
func (s *System) readInt(p string) (int64, error) {
	v, err := s.readString(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", p, v)
	}
	return n, nil
}

func (s *System) exists(p string) bool {
	_, err := os.Stat(s.path(p))
	return err == nil
}

func (s *System) euid() int {
	if s.Euid != nil {
		return s.Euid()
	}
	return os.Geteuid()
}

// isNotExist reports a missing file, including ENOTDIR from a path through a plain file.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}

// CPUSet is a sorted list of distinct CPU numbers.
type CPUSet []int

// maxCPU bounds CPU lists so that a corrupt file cannot make us allocate without limit.
const maxCPU = 1 << 16

// isolcpusFlags are the words isolcpus= accepts before its CPU list (linux
// Documentation/admin-guide/kernel-parameters.txt).
var isolcpusFlags = map[string]bool{"nohz": true, "domain": true, "managed_irq": true}

// ParseCPUList parses the kernel's CPU list format ("0-3,8,10-11", as in
// /sys/devices/system/cpu/online and isolcpus=). An empty string is the empty set. isolcpus
// flag words ("domain", "managed_irq", "nohz") are skipped.
func ParseCPUList(s string) (CPUSet, error) {
	var out CPUSet
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if isolcpusFlags[part] {
			continue // isolcpus=managed_irq,domain,2-5
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= maxCPU {
			return nil, fmt.Errorf("bad CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			// The kernel also accepts "a-b:used/group"; keep only the range.
			hi, _, _ = strings.Cut(hi, ":")
			b, err = strconv.Atoi(hi)
			if err != nil || b < a || b >= maxCPU {
				return nil, fmt.Errorf("bad CPU list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Has reports whether cpu is in the set.
func (c CPUSet) Has(cpu int) bool {
	_, ok := slices.BinarySearch(c, cpu)
	return ok
}

// Minus returns the CPUs of c not in o.
func (c CPUSet) Minus(o CPUSet) CPUSet {
	var out CPUSet
	for _, x := range c {
		if !o.Has(x) {
			out = append(out, x)
		}
	}
	return out
}

// String formats the set in the kernel's list format ("0-3,8").
func (c CPUSet) String() string {
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			b.WriteString(strconv.Itoa(c[i]))
		} else {
			fmt.Fprintf(&b, "%d-%d", c[i], c[j])
		}
		i = j + 1
	}
	return b.String()
}

// onlineCPUs reads /sys/devices/system/cpu/online.
func (s *System) onlineCPUs() (CPUSet, error) {
	v, err := s.readString("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return ParseCPUList(v)
}

// cmdline returns the kernel boot parameters as key → value ("" for bare flags); a key given
// twice keeps its last value, as the kernel does for most parameters.
func (s *System) cmdline() (map[string]string, string, error) {
	raw, err := s.readString("/proc/cmdline")
	if err != nil {
		return nil, "", err
	}
	m := map[string]string{}
	for _, w := range strings.Fields(raw) {
		if w == "--" {
			break // the rest belongs to init
		}
		k, v, _ := strings.Cut(w, "=")
		m[k] = v
	}
	return m, raw, nil
}

// isolatedCPUs returns the isolated CPUs: /sys/devices/system/cpu/isolated when present
// (what the kernel actually did), else the CPUs named by isolcpus= on the boot line.
func (s *System) isolatedCPUs() (CPUSet, string, error) {
	if v, err := s.readString("/sys/devices/system/cpu/isolated"); err == nil {
		set, err := ParseCPUList(v)
		return set, "/sys/devices/system/cpu/isolated", err
	}
	m, _, err := s.cmdline()
	if err != nil {
		return nil, "", err
	}
	set, err := ParseCPUList(m["isolcpus"])
	return set, "isolcpus=", err
}

// meminfo reads /proc/meminfo into key → value in the file's unit (kB or a count).
func (s *System) meminfo() (map[string]int64, error) {
	raw, err := s.readString("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, line := range strings.Split(raw, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			m[strings.TrimSpace(k)] = n
		}
	}
	return m, nil
}

// numaNodes lists the node numbers under /sys/devices/system/node.
func (s *System) numaNodes() ([]int, error) {
	ents, err := os.ReadDir(s.path("/sys/devices/system/node"))
	if err != nil {
		return nil, err
	}
	var nodes []int
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "node"); ok {
			if v, err := strconv.Atoi(n); err == nil {
				nodes = append(nodes, v)
			}
		}
	}
	slices.Sort(nodes)
	return nodes, nil
}

// modules returns the names of loaded kernel modules from /proc/modules.
func (s *System) modules() (map[string]bool, error) {
	raw, err := s.readString("/proc/modules")
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, line := range strings.Split(raw, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			m[f[0]] = true
		}
	}
	return m, nil
}
