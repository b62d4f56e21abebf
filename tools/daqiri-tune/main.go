// Command daqiri-tune checks whether this machine is set up for line-rate packet I/O with
// daqiri, and sets PCIe MRRS on NVIDIA NICs.
//
//	daqiri-tune check [all|cpu-freq|mrrs|mps|hugepages|numa|gpu-clock|bar1-size|topo|schematic|cmdline|mtu|gpudirect|peermem] [--json]
//	daqiri-tune check schematic [--schematic-output FILE]
//	daqiri-tune check config FILE [--json]
//	daqiri-tune set mrrs [BDF|IFNAME ...] [--json]
//
// --root DIR reads sysfs/procfs below DIR instead of / (GPU facts then come from
// DIR/gpu-facts.json when present). check schematic writes an SVG picture of the PCIe tree
// to FILE (default pcie_schematic.svg in the working directory); check all writes it only
// when --schematic-output is given. Exit status: 0 when no finding is FAIL, 1 when one is,
// 2 for usage errors and refusals.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/tune"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `usage:
  daqiri-tune check [CHECK] [--json] [--root DIR]     CHECK: %s (default all)
  daqiri-tune check schematic|all [--schematic-output FILE.svg]
  daqiri-tune check config FILE [--json] [--root DIR]
  daqiri-tune set mrrs [BDF|IFNAME ...] [--json] [--root DIR]

checks:
`, strings.Join(tune.CheckNames(), "|"))
	for _, c := range tune.Checks {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Help)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "config", "a DAQIRI YAML against this machine: cores, hugepages, interfaces/MTU, GPU ordinals")
	fmt.Fprintln(w, "\nexit status: 0 no FAIL finding, 1 some FAIL finding, 2 usage error or refusal")
}

// splitFlags separates flags from positional words so flags may come anywhere
// (`check all --json` and `--json check all` both work).
func splitFlags(args []string) (flags, words []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(words, args[i+1:]...)
		case a == "--root" || a == "-root" || a == "--schematic-output" || a == "-schematic-output":
			flags = append(flags, a)
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
		default:
			words = append(words, a)
		}
	}
	return flags, words
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("daqiri-tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr) }
	jsonOut := fs.Bool("json", false, "print findings as JSON")
	root := fs.String("root", "/", "read sysfs/procfs below this directory (a fixture tree) instead of /")
	schematicOut := fs.String("schematic-output", "", "write the PCIe tree as an SVG picture to this file (check schematic: default "+tune.SchematicFile+"; check all: only when given)")
	flags, words := splitFlags(args)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(words) == 0 {
		usage(stderr)
		return 2
	}
	sys := tune.NewSystem()
	if *root != "/" {
		sys = &tune.System{Root: *root}
		if p := filepath.Join(*root, tune.FixtureGPUFile); fileExists(p) {
			sys.GPU = tune.FileSource(p)
		}
	}

	if *schematicOut != "" {
		if words[0] != "check" || (len(words) > 1 && words[1] != "all" && words[1] != "schematic") {
			fmt.Fprintf(stderr, "daqiri-tune: --schematic-output applies to check schematic and check all, not %s\n", strings.Join(words, " "))
			return 2
		}
	}

	var findings []tune.Finding
	switch words[0] {
	case "check":
		what := "all"
		if len(words) > 1 {
			what = words[1]
		}
		if what == "config" {
			if len(words) != 3 {
				fmt.Fprintln(stderr, "daqiri-tune: check config needs exactly one FILE")
				return 2
			}
			cfg, err := config.LoadFile(words[2])
			if err != nil {
				fmt.Fprintf(stderr, "daqiri-tune: %v\n", err)
				return 2
			}
			findings = sys.CheckConfig(cfg)
			break
		}
		if len(words) > 2 {
			fmt.Fprintf(stderr, "daqiri-tune: check takes one check name, got %q\n", strings.Join(words[1:], " "))
			return 2
		}
		// Only an explicit check schematic writes the default file: check all is run
		// routinely and must not leave pictures in whatever directory it was run from.
		switch {
		case *schematicOut != "":
			sys.SchematicOutput, sys.SchematicNamed = *schematicOut, true
		case what == "schematic":
			sys.SchematicOutput = tune.SchematicFile
		}
		var err error
		findings, err = sys.Run(what)
		if err != nil {
			fmt.Fprintf(stderr, "daqiri-tune: %v\n", err)
			return 2
		}
	case "set":
		if len(words) < 2 || words[1] != "mrrs" {
			fmt.Fprintln(stderr, "daqiri-tune: the only setting is: set mrrs [BDF|IFNAME ...]")
			return 2
		}
		var err error
		findings, err = sys.SetMRRS(words[2:])
		if err != nil {
			fmt.Fprintf(stderr, "daqiri-tune: %v\n", err)
			return 2
		}
	case "help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "daqiri-tune: unknown command %q\n", words[0])
		usage(stderr)
		return 2
	}

	var err error
	if *jsonOut {
		err = tune.WriteJSON(stdout, findings)
	} else {
		err = tune.WriteTable(stdout, findings)
	}
	if err != nil {
		fmt.Fprintf(stderr, "daqiri-tune: %v\n", err)
		return 2
	}
	if tune.Worst(findings) == tune.StatusFail {
		return 1
	}
	return 0
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
