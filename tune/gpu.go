package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/tune/internal/nvgpu"
)

// Tri is a yes/no fact that may be unknown.
type Tri int8

// Tri values.
const (
	Unknown Tri = iota
	Yes
	No
)

// String is "yes", "no" or "unknown".
func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unknown"
}

// MarshalJSON writes the Tri as its string.
func (t Tri) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads "yes", "no", "unknown", or a JSON bool.
func (t *Tri) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v {
	case "yes", true:
		*t = Yes
	case "no", false:
		*t = No
	case "unknown", nil:
		*t = Unknown
	default:
		return fmt.Errorf("bad yes/no value %s (want \"yes\", \"no\", \"unknown\" or a bool)", b)
	}
	return nil
}

func triOf(v int) Tri {
	switch {
	case v > 0:
		return Yes
	case v == 0:
		return No
	}
	return Unknown
}

// GPU is what is known about one NVIDIA GPU. Numbers that could not be read are -1.
type GPU struct {
	Index          int    `json:"index"`            // CUDA ordinal when the CUDA driver answered, else NVML/nvidia-smi index
	Name           string `json:"name"`             // marketing name, e.g. "NVIDIA H100 80GB HBM3"
	BusID          string `json:"bus_id"`           // PCI address in sysfs form, e.g. 0000:17:00.0
	Integrated     Tri    `json:"integrated"`       // shares memory with the CPU (GB10 / DGX Spark, Orin)
	GPUDirectRDMA  Tri    `json:"gpudirect_rdma"`   // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	DMABuf         Tri    `json:"dma_buf"`          // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
	SMClockMHz     int    `json:"sm_clock_mhz"`     // current SM clock
	SMClockMaxMHz  int    `json:"sm_clock_max_mhz"` // maximum SM clock
	MemClockMHz    int    `json:"mem_clock_mhz"`    // current memory clock
	MemClockMaxMHz int    `json:"mem_clock_max_mhz"`
	BAR1MiB        int64  `json:"bar1_mib"` // BAR1 aperture as the driver reports it
}

// NewGPU returns a GPU with every number unknown (-1).
func NewGPU() GPU {
	return GPU{SMClockMHz: -1, SMClockMaxMHz: -1, MemClockMHz: -1, MemClockMaxMHz: -1, BAR1MiB: -1}
}

// UnmarshalJSON fills absent numbers with -1 (unknown) rather than 0.
func (g *GPU) UnmarshalJSON(b []byte) error {
	type plain GPU
	p := plain(NewGPU())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*g = GPU(p)
	g.BusID = NormalizeBDF(g.BusID)
	return nil
}

// GPUFacts is the answer of a GPUSource.
type GPUFacts struct {
	Source string `json:"source"`         // "nvml", "nvml+cuda", "nvidia-smi", "fixture", "none"
	Driver string `json:"driver"`         // driver version when known
	GPUs   []GPU  `json:"gpus"`           // empty when there is no NVIDIA GPU
	Note   string `json:"note,omitempty"` // why facts are missing or partial
}

// GPUSource gives GPU facts. Implementations: AutoGPUSource (NVML + CUDA driver, else
// nvidia-smi), SMISource, FileSource, StaticGPUSource (tests).
type GPUSource interface {
	GPUFacts() (GPUFacts, error)
}

// StaticGPUSource returns fixed facts (for tests and callers that already know them).
type StaticGPUSource GPUFacts

// GPUFacts returns the fixed facts.
func (s StaticGPUSource) GPUFacts() (GPUFacts, error) { return GPUFacts(s), nil }

// FileSource reads GPU facts from a JSON file shaped like GPUFacts (fixture trees carry one
// as gpu-facts.json beside sys/ and proc/).
type FileSource string

// GPUFacts reads and decodes the file.
func (f FileSource) GPUFacts() (GPUFacts, error) {
	b, err := os.ReadFile(string(f))
	if err != nil {
		return GPUFacts{}, err
	}
	var g GPUFacts
	if err := json.Unmarshal(b, &g); err != nil {
		return GPUFacts{}, fmt.Errorf("%s: %v", f, err)
	}
	if g.Source == "" {
		g.Source = "fixture"
	}
	return g, nil
}

// FixtureGPUFile is the name of the GPU facts file in a fixture root.
const FixtureGPUFile = "gpu-facts.json"

// gpuFacts returns the (cached) GPU facts of the system.
func (s *System) gpuFacts() (GPUFacts, error) {
	s.gpuOnce.Do(func() {
		if s.GPU == nil {
			s.gpuCache = GPUFacts{Source: "none", Note: "no GPU facts source configured"}
			return
		}
		s.gpuCache, s.gpuErr = s.GPU.GPUFacts()
	})
	return s.gpuCache, s.gpuErr
}

// integratedName recognises NVIDIA GPUs that share memory with the CPU by name, for when the
// CUDA driver (which knows for sure) cannot be asked.
func integratedName(name string) bool {
	n := strings.ToUpper(name)
	for _, k := range []string{"GB10", "ORIN", "THOR", "XAVIER"} {
		if strings.Contains(n, k) {
			return true
		}
	}
	return false
}

// AutoGPUSource asks NVML (libnvidia-ml.so.1) and the CUDA driver (libcuda.so.1) through
// purego, and falls back to nvidia-smi when NVML is not installed.
func AutoGPUSource() GPUSource { return autoSource{} }

type autoSource struct{}

func (autoSource) GPUFacts() (GPUFacts, error) {
	nv, driver, nvErr := nvgpu.NVMLDevices()
	cu, cuErr := nvgpu.CUDADevices()
	var f GPUFacts
	var notes []string
	switch {
	case nvErr == nil:
		f.Source = "nvml"
		f.Driver = driver
		for _, d := range nv {
			g := NewGPU()
			g.Index, g.Name, g.BusID = d.Index, d.Name, NormalizeBDF(d.BusID)
			g.SMClockMHz, g.SMClockMaxMHz = d.SMClock, d.SMClockMax
			g.MemClockMHz, g.MemClockMaxMHz = d.MemClock, d.MemClockMax
			if d.BAR1Bytes >= 0 {
				g.BAR1MiB = d.BAR1Bytes >> 20
			}
			f.GPUs = append(f.GPUs, g)
		}
	case errors.Is(nvErr, nvgpu.ErrNoLibrary):
		smi, err := SMISource{}.GPUFacts()
		if err != nil {
			notes = append(notes, "NVML: libnvidia-ml.so.1 not found; nvidia-smi: "+err.Error())
			f.Source = "none"
		} else {
			f = smi
		}
	default:
		notes = append(notes, "NVML: "+nvErr.Error())
		if smi, err := (SMISource{}).GPUFacts(); err == nil {
			f = smi
		} else {
			f.Source = "none"
		}
	}
	if cuErr == nil {
		mergeCUDA(&f, cu)
	} else if !errors.Is(cuErr, nvgpu.ErrNoLibrary) || len(f.GPUs) > 0 {
		notes = append(notes, "CUDA driver: "+cuErr.Error())
	}
	for i := range f.GPUs {
		if f.GPUs[i].Integrated == Unknown && integratedName(f.GPUs[i].Name) {
			f.GPUs[i].Integrated = Yes
		}
	}
	f.Note = strings.Join(notes, "; ")
	return f, nil
}

// mergeCUDA adds the CUDA driver's attributes to the GPUs NVML/nvidia-smi found (matched by
// PCI address) and renumbers them by CUDA ordinal, the numbering daqiri's YAML uses.
func mergeCUDA(f *GPUFacts, cu []nvgpu.CUDADevice) {
	if len(cu) == 0 {
		return
	}
	if f.Source == "none" || f.Source == "" {
		f.Source = "cuda"
	} else {
		f.Source += "+cuda"
	}
	for _, d := range cu {
		bus := NormalizeBDF(d.BusID)
		idx := -1
		for i := range f.GPUs {
			if f.GPUs[i].BusID == bus {
				idx = i
				break
			}
		}
		if idx < 0 {
			g := NewGPU()
			g.Name, g.BusID = d.Name, bus
			f.GPUs = append(f.GPUs, g)
			idx = len(f.GPUs) - 1
		}
		g := &f.GPUs[idx]
		g.Index = d.Ordinal
		g.Integrated = triOf(d.Integrated)
		g.GPUDirectRDMA = triOf(d.GPUDirectRDMA)
		g.DMABuf = triOf(d.DMABuf)
	}
}

// SMISource asks nvidia-smi. Run runs nvidia-smi with the given arguments and returns its
// standard output; nil runs the nvidia-smi found in PATH with a 20 s limit.
type SMISource struct {
	Run func(args ...string) ([]byte, error)
}

// smiQuery is the main --query-gpu field list; memory.bar1.total is asked separately
// because older drivers reject it and a rejected field fails the whole query.
const smiQuery = "index,name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem"

// GPUFacts runs nvidia-smi and parses its CSV output.
func (s SMISource) GPUFacts() (GPUFacts, error) {
	run := s.Run
	if run == nil {
		run = runSMI
	}
	out, err := run("--query-gpu="+smiQuery, "--format=csv,noheader,nounits")
	if err != nil {
		return GPUFacts{}, err
	}
	f, err := ParseSMI(out)
	if err != nil {
		return f, err
	}
	if bar, err := run("--query-gpu=pci.bus_id,memory.bar1.total", "--format=csv,noheader,nounits"); err == nil {
		ParseSMIBar1(&f, bar)
	}
	return f, nil
}

func runSMI(args ...string) ([]byte, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, errors.New("nvidia-smi not found in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String() + " " + string(out))
		return nil, fmt.Errorf("nvidia-smi %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// smiNumber parses an nvidia-smi number; "[N/A]", "N/A", "[Not Supported]" and friends are -1.
func smiNumber(s string) int {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return int(f)
	}
	return -1
}

// ParseSMI parses `nvidia-smi --query-gpu=<smiQuery> --format=csv,noheader,nounits`.
func ParseSMI(out []byte) (GPUFacts, error) {
	f := GPUFacts{Source: "nvidia-smi"}
	for ln, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "No devices were found") {
			return f, nil
		}
		c := strings.Split(line, ",")
		if len(c) != 8 {
			return f, fmt.Errorf("nvidia-smi output line %d has %d fields, want 8: %q", ln+1, len(c), line)
		}
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		g := NewGPU()
		idx, err := strconv.Atoi(c[0])
		if err != nil {
			return f, fmt.Errorf("nvidia-smi output line %d: index %q is not a number", ln+1, c[0])
		}
		g.Index, g.Name, g.BusID = idx, c[1], NormalizeBDF(c[2])
		f.Driver = c[3]
		g.SMClockMHz, g.SMClockMaxMHz = smiNumber(c[4]), smiNumber(c[5])
		g.MemClockMHz, g.MemClockMaxMHz = smiNumber(c[6]), smiNumber(c[7])
		if integratedName(g.Name) {
			g.Integrated = Yes
		}
		f.GPUs = append(f.GPUs, g)
	}
	return f, nil
}

// ParseSMIBar1 adds `--query-gpu=pci.bus_id,memory.bar1.total` output (MiB) to f.
func ParseSMIBar1(f *GPUFacts, out []byte) {
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		bus, val, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		bus = NormalizeBDF(bus)
		for i := range f.GPUs {
			if f.GPUs[i].BusID == bus {
				if v := smiNumber(val); v >= 0 {
					f.GPUs[i].BAR1MiB = int64(v)
				}
			}
		}
	}
}
