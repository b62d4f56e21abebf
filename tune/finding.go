// Package tune checks whether a machine is set up for line-rate packet I/O with daqiri and
// applies the few safe fixes that can be made at run time.
//
// It is the Go counterpart of upstream DAQIRI's python/tune_system.py: CPU governor, kernel
// boot line, hugepages, NUMA placement, PCIe Max Read Request Size and Max Payload Size of
// NVIDIA (Mellanox) NICs, NIC MTU, GPU clocks, BAR1 size, GPU↔NIC PCIe topology, GPUDirect
// support and nvidia-peermem. Every fact is read from sysfs, procfs and PCI configuration
// space files under a configurable root, so the same checks run against the live machine
// (root "/") and against fixture trees in tests. GPU facts come from a GPUSource (NVML and the
// CUDA driver through purego, nvidia-smi as a fallback, or a fake).
//
// Each check returns Findings: a status (OK, WARN, FAIL, SKIP), what was measured, what is
// recommended, and the exact command or kernel boot-line change that fixes it.
package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is the verdict of one finding.
type Status int

// Statuses, in increasing order of severity (SKIP sorts lowest: nothing was judged).
const (
	StatusSkip Status = iota // the check does not apply here or its facts cannot be read
	StatusOK                 // the setting is what daqiri wants
	StatusWarn               // works, but costs performance or predictability
	StatusFail               // will not work as configured
)

var statusNames = [...]string{"SKIP", "OK", "WARN", "FAIL"}

// String is the status as printed: SKIP, OK, WARN or FAIL.
func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return fmt.Sprintf("Status(%d)", int(s))
	}
	return statusNames[s]
}

// MarshalJSON writes the status as its name, so JSON consumers need no table of numbers.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a status name.
func (s *Status) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for i, n := range statusNames {
		if n == name {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("unknown finding status %q (want SKIP, OK, WARN or FAIL)", name)
}

// Finding is one verdict of one check about one subject (a NIC, a GPU, the CPU set, ...).
type Finding struct {
	Check       string `json:"check"`                 // check name, e.g. "mrrs"
	Subject     string `json:"subject,omitempty"`     // what was inspected, e.g. "enp1s0f0np0 0000:01:00.0"
	Status      Status `json:"status"`                // OK, WARN, FAIL or SKIP
	Measured    string `json:"measured,omitempty"`    // the value found on the machine
	Recommended string `json:"recommended,omitempty"` // the value daqiri wants
	Fix         string `json:"fix,omitempty"`         // exact command or boot-line change
	Message     string `json:"message,omitempty"`     // one sentence of explanation
}

// Worst returns the most severe status among findings (SKIP when there are none).
func Worst(fs []Finding) Status {
	w := StatusSkip
	for _, f := range fs {
		if f.Status > w {
			w = f.Status
		}
	}
	return w
}

// Counts returns how many findings have each status.
func Counts(fs []Finding) map[Status]int {
	m := map[Status]int{}
	for _, f := range fs {
		m[f.Status]++
	}
	return m
}

// WriteTable prints findings as an aligned table; each finding's message and fix follow on
// indented lines so long commands stay copyable and do not widen the columns.
func WriteTable(w io.Writer, fs []Finding) error {
	head := [5]string{"CHECK", "STATUS", "SUBJECT", "MEASURED", "RECOMMENDED"}
	rows := make([][5]string, len(fs))
	width := [5]int{}
	for i := range head {
		width[i] = len(head[i])
	}
	for i, f := range fs {
		rows[i] = [5]string{f.Check, f.Status.String(), dash(f.Subject), dash(f.Measured), dash(f.Recommended)}
		for j, c := range rows[i] {
			width[j] = max(width[j], len(c))
		}
	}
	var b strings.Builder
	line := func(cells [5]string) {
		for j, c := range cells {
			if j == len(cells)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[j]-len(c)+2))
		}
		b.WriteByte('\n')
	}
	line(head)
	indent := strings.Repeat(" ", width[0]+2)
	for i, f := range fs {
		line(rows[i])
		if f.Message != "" {
			b.WriteString(indent + f.Message + "\n")
		}
		for k, l := range strings.Split(f.Fix, "\n") {
			if f.Fix == "" {
				break
			}
			prefix := "fix: "
			if k > 0 {
				prefix = "     "
			}
			b.WriteString(indent + prefix + l + "\n")
		}
	}
	c := Counts(fs)
	fmt.Fprintf(&b, "\n%d OK, %d WARN, %d FAIL, %d SKIP\n", c[StatusOK], c[StatusWarn], c[StatusFail], c[StatusSkip])
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints findings as one JSON object {"findings": [...], "summary": {...}}.
func WriteJSON(w io.Writer, fs []Finding) error {
	c := Counts(fs)
	if fs == nil {
		fs = []Finding{}
	}
	out := struct {
		Findings []Finding      `json:"findings"`
		Summary  map[string]int `json:"summary"`
		Worst    Status         `json:"worst"`
	}{fs, map[string]int{"OK": c[StatusOK], "WARN": c[StatusWarn], "FAIL": c[StatusFail], "SKIP": c[StatusSkip]}, Worst(fs)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
