// Command daqiri-mlx5trace reads the PRM command traces the mlx5 engine writes (set
// DAQIRI_MLX5_TRACE=FILE; format: package mlx5/channel/trace) without the engine: it
// checks every record against its own bytes and prints the calls, the objects in creation
// order, or the command bytes.
//
//	daqiri-mlx5trace [-check] [-objects] [-hex] [FILE ...]
//
// With no FILE (or "-") it reads standard input. By default it prints one line per record:
// sequence, time since the first record, channel, call, command and op_mod by name, object
// id, status and syndrome, duration. -hex adds the input and output as big-endian dwords
// with their byte offsets (the way mlx5_ifc.h fields are addressed). -objects prints only
// the objects: each create and destroy with its id, then what was still open when each
// channel closed. -check prints only a summary. Exit status: 0 when every record is valid,
// 1 when one is not (the message names the file and line), 2 for usage errors.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type options struct {
	check, objects, hex bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("daqiri-mlx5trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.BoolVar(&o.check, "check", false, "only check the records and print a summary")
	fs.BoolVar(&o.objects, "objects", false, "print the objects created and destroyed, in order")
	fs.BoolVar(&o.hex, "hex", false, "print each command's input and output as dwords")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: daqiri-mlx5trace [-check] [-objects] [-hex] [FILE ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.check && (o.objects || o.hex) {
		fmt.Fprintln(stderr, "daqiri-mlx5trace: -check prints only a summary; leave out -objects and -hex")
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		var r io.Reader = stdin
		var f *os.File
		if name != "-" {
			var err error
			if f, err = os.Open(name); err != nil {
				fmt.Fprintf(stderr, "daqiri-mlx5trace: %v\n", err)
				status = 1
				continue
			}
			r = f
		} else {
			name = "standard input"
		}
		err := show(name, r, o, stdout)
		if f != nil {
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "daqiri-mlx5trace: %s: %v\n", name, err)
			status = 1
		}
	}
	return status
}

// summary counts what a trace holds.
type summary struct {
	records, commands, creates, destroys, failed int
	openAtClose                                  int // objects a channel still held when it closed (Close released them)
	channels                                     map[string]bool
}

type liveObj struct {
	op   string
	obj  uint32
	line int
}

func show(name string, r io.Reader, o options, w io.Writer) error {
	d := trace.NewDecoder(r)
	s := summary{channels: map[string]bool{}}
	var first time.Time
	live := map[string][]liveObj{} // per channel, creation order
	for {
		rec, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if s.records == 0 {
			first = rec.Time
		}
		s.records++
		s.channels[rec.Channel] = true
		if rec.Op != "" && rec.Call != "destroy" {
			s.commands++
		}
		if rec.Err != "" {
			s.failed++
		}
		switch {
		case rec.Call == "create" && rec.Err == "":
			s.creates++
			live[rec.Channel] = append(live[rec.Channel], liveObj{rec.Op, rec.Obj, d.Line()})
		case rec.Call == "destroy" && rec.Err == "":
			s.destroys++
			created := strings.TrimPrefix(rec.Arg, "created_by:")
			l := live[rec.Channel]
			for i := len(l) - 1; i >= 0; i-- {
				if l[i].obj == rec.Obj && l[i].op == created {
					live[rec.Channel] = append(l[:i], l[i+1:]...)
					break
				}
			}
		}
		if rec.Call == "close" {
			s.openAtClose += len(live[rec.Channel])
		}
		switch {
		case o.check:
		case o.objects:
			switch {
			case rec.Call == "create" && rec.Err == "":
				fmt.Fprintf(w, "%6d %-10s create  %-32s obj=%d\n", d.Line(), rec.Channel, rec.Op, rec.Obj)
			case rec.Call == "destroy" && rec.Err == "":
				fmt.Fprintf(w, "%6d %-10s destroy %-32s obj=%d\n", d.Line(), rec.Channel, rec.Op, rec.Obj)
			case rec.Call == "close":
				for _, l := range live[rec.Channel] {
					fmt.Fprintf(w, "%6d %-10s open at close: %s obj=%d (created on line %d)\n", d.Line(), rec.Channel, l.op, l.obj, l.line)
				}
			}
		default:
			printRecord(w, rec, rec.Time.Sub(first), o.hex)
		}
		if rec.Call == "close" {
			// A channel of the same name may open again later in the file (traces append).
			delete(live, rec.Channel)
		}
	}
	if o.check {
		fmt.Fprintf(w, "%s: %d records valid: %d channels, %d commands, %d objects created, %d destroyed, %d open at close, %d calls failed\n",
			name, s.records, len(s.channels), s.commands, s.creates, s.destroys, s.openAtClose, s.failed)
	}
	return nil
}

func printRecord(w io.Writer, r trace.Record, since time.Duration, hex bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "#%-5d +%-12s %-10s %-12s", r.Seq, since.Round(time.Microsecond), r.Channel, r.Call)
	if r.Op != "" {
		op := r.Op
		if r.OpModName != "" {
			op += "(" + r.OpModName + ")"
		} else if r.OpMod != 0 {
			op += fmt.Sprintf("(op_mod %#x)", r.OpMod)
		}
		fmt.Fprintf(&b, " %-36s", op)
	}
	if r.HasObj {
		fmt.Fprintf(&b, " obj=%d", r.Obj)
	}
	if r.Arg != "" {
		fmt.Fprintf(&b, " %s", r.Arg)
	}
	if r.Status != "" {
		fmt.Fprintf(&b, " %s", r.Status)
		if r.Syndrome != 0 {
			fmt.Fprintf(&b, " syndrome=%#x", r.Syndrome)
		}
	}
	fmt.Fprintf(&b, " %v", r.Dur)
	if r.Err != "" {
		fmt.Fprintf(&b, " error: %s", r.Err)
	}
	fmt.Fprintln(w, b.String())
	if hex {
		dump(w, "in ", r.In)
		dump(w, "out", r.Out)
	}
}

// dump prints b as big-endian dwords, eight per line, each line led by its byte offset.
func dump(w io.Writer, what string, b []byte) {
	for off := 0; off < len(b); off += 32 {
		var line strings.Builder
		fmt.Fprintf(&line, "    %s %04x:", what, off)
		for i := off; i < off+32 && i < len(b); i += 4 {
			if i+4 <= len(b) {
				fmt.Fprintf(&line, " %08x", binary.BigEndian.Uint32(b[i:]))
			} else {
				fmt.Fprintf(&line, " %x", b[i:])
			}
		}
		fmt.Fprintln(w, line.String())
	}
}
