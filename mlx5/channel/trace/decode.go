package trace

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// fieldOrder is the version-1 field order (package doc).
func fieldOrder() [16]string {
	return [16]string{"seq", "t", "ch", "call", "op", "opcode", "op_mod", "op_mod_name", "obj", "arg", "status", "syndrome", "dur_ns", "in", "out", "err"}
}

// calls are the call kinds a version-1 record may have.
func knownCall(s string) bool {
	switch s {
	case "exec", "create", "modify", "query", "destroy", "umem_reg", "umem_release",
		"uar_alloc", "uar_release", "eqn", "attach_root", "detach_root", "pp_alloc", "pp_release", "close":
		return true
	}
	return false
}

// Parse reads one record line (no newline). It checks the syntax and every number; Check
// then checks the record's consistency.
func Parse(line string) (Record, error) {
	var r Record
	rest, ok := strings.CutPrefix(line, Magic+" ")
	if !ok {
		return r, fmt.Errorf("not a %s record (starts %q)", Magic, truncate(line, 20))
	}
	order := fieldOrder()
	vals := make(map[string]string, len(order))
	for i, key := range order {
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k != key {
			return r, fmt.Errorf("field %d: want %s=, found %q", i+1, key, truncate(rest, 20))
		}
		rest = v
		if key == "err" {
			if strings.HasPrefix(rest, "-") {
				vals[key], rest = "-", rest[1:]
				break
			}
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return r, fmt.Errorf("err: %v in %q", err, truncate(rest, 40))
			}
			s, _ := strconv.Unquote(q)
			vals[key], rest = s, rest[len(q):]
			if s == "" || s == "-" {
				return r, fmt.Errorf("err: %q is not an error text", q)
			}
			break
		}
		v, rest, ok = strings.Cut(rest, " ")
		if !ok {
			return r, fmt.Errorf("record ends after %s", key)
		}
		if v == "" {
			return r, fmt.Errorf("%s: empty value", key)
		}
		vals[key] = v
	}
	if rest != "" {
		return r, fmt.Errorf("trailing text %q", truncate(rest, 20))
	}
	var err error
	num := func(key string, bits int) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = strconv.ParseUint(vals[key], 0, bits)
		if err != nil {
			err = fmt.Errorf("%s: %w", key, err)
		}
		return v
	}
	r.Seq = num("seq", 64)
	if err != nil {
		return r, err
	}
	tm, terr := time.Parse(time.RFC3339Nano, vals["t"])
	if terr != nil {
		return r, fmt.Errorf("t: %w", terr)
	}
	r.Time = tm
	r.Channel = undash(vals["ch"])
	r.Call = vals["call"]
	if !knownCall(r.Call) {
		return r, fmt.Errorf("call: unknown kind %q", r.Call)
	}
	if vals["op"] != "-" {
		r.Op = vals["op"]
		r.Opcode = uint16(num("opcode", 16))
		if vals["op_mod"] != "-" {
			r.OpMod = uint16(num("op_mod", 16))
		}
		r.OpModName = undash(vals["op_mod_name"])
	} else if vals["opcode"] != "-" || vals["op_mod"] != "-" || vals["op_mod_name"] != "-" {
		return r, fmt.Errorf("op is - but opcode/op_mod/op_mod_name are %s/%s/%s", vals["opcode"], vals["op_mod"], vals["op_mod_name"])
	}
	if vals["obj"] != "-" {
		r.Obj, r.HasObj = uint32(num("obj", 32)), true
	}
	r.Arg = undash(vals["arg"])
	if vals["status"] != "-" {
		r.Status = vals["status"]
		r.Syndrome = uint32(num("syndrome", 32))
	} else if vals["syndrome"] != "-" {
		return r, fmt.Errorf("status is - but syndrome is %s", vals["syndrome"])
	}
	r.Dur = time.Duration(num("dur_ns", 63))
	if err != nil {
		return r, err
	}
	for _, k := range []string{"in", "out"} {
		if vals[k] == "-" {
			continue
		}
		b, herr := hex.DecodeString(vals[k])
		if herr != nil {
			return r, fmt.Errorf("%s: %w", k, herr)
		}
		if k == "in" {
			r.In = b
		} else {
			r.Out = b
		}
	}
	r.Err = undash(vals["err"])
	return r, nil
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Check reports what in a parsed record contradicts itself: an opcode, op_mod or op_mod
// name that is not what the input bytes and package prm say, a status or syndrome that
// is not what the output bytes hold, a command call without its command.
func Check(r Record) error {
	isCmd := r.Call == "exec" || r.Call == "create" || r.Call == "modify" || r.Call == "query"
	if isCmd && r.Op == "" {
		if r.Err == "" || len(r.In) >= 8 {
			return fmt.Errorf("%s record without a command", r.Call)
		}
		isCmd = false // refused for its short input: nothing to check against
	}
	if r.Op != "" {
		if want := prm.CmdOp(r.Opcode).String(); r.Op != want {
			return fmt.Errorf("op %s, but opcode %#x is %s", r.Op, r.Opcode, want)
		}
	}
	if isCmd {
		if len(r.In) < 8 {
			return fmt.Errorf("%s %s: input of %d bytes", r.Call, r.Op, len(r.In))
		}
		if op := uint16(prm.CmdIn.Opcode.Get(r.In)); op != r.Opcode {
			return fmt.Errorf("opcode %#x, but the input starts with %#x", r.Opcode, op)
		}
		if m := uint16(prm.CmdIn.OpMod.Get(r.In)); m != r.OpMod {
			return fmt.Errorf("op_mod %#x, but the input has %#x", r.OpMod, m)
		}
		if want := OpModName(r.Opcode, r.OpMod); r.OpModName != want {
			return fmt.Errorf("op_mod_name %q, but op_mod %#x of %s is %q", r.OpModName, r.OpMod, r.Op, want)
		}
	}
	if r.Status != "" {
		if len(r.Out) < 8 {
			return fmt.Errorf("status %s without an output to hold it", r.Status)
		}
		if s := prm.Status(prm.CmdOut.Status.Get(r.Out)).String(); s != r.Status {
			return fmt.Errorf("status %s, but the output holds %s", r.Status, s)
		}
		if s := uint32(prm.CmdOut.Syndrome.Get(r.Out)); s != r.Syndrome {
			return fmt.Errorf("syndrome %#x, but the output holds %#x", r.Syndrome, s)
		}
		if r.Status != prm.StatusOK.String() && r.Err == "" {
			return fmt.Errorf("status %s but no error", r.Status)
		}
	}
	if r.Call == "create" && r.Err == "" && !r.HasObj {
		return fmt.Errorf("create %s succeeded without an object id", r.Op)
	}
	return nil
}

// Decoder reads records from a trace, skipping comments and blank lines.
type Decoder struct {
	s    *bufio.Scanner
	line int
}

// NewDecoder reads r.
func NewDecoder(r io.Reader) *Decoder {
	s := bufio.NewScanner(r)
	// A record holds a command's whole input and output in hex; PRM commands with mailboxes
	// reach some hundred KiB.
	s.Buffer(make([]byte, 64<<10), 16<<20)
	return &Decoder{s: s}
}

// Line is the number of the line Next read last.
func (d *Decoder) Line() int { return d.line }

// Next returns the next record, io.EOF at the end, or an error naming the line that is not
// a valid record (Parse, then Check).
func (d *Decoder) Next() (Record, error) {
	for d.s.Scan() {
		d.line++
		l := strings.TrimRight(d.s.Text(), "\r")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		r, err := Parse(l)
		if err == nil {
			err = Check(r)
		}
		if err != nil {
			return r, fmt.Errorf("line %d: %w", d.line, err)
		}
		return r, nil
	}
	if err := d.s.Err(); err != nil {
		return Record{}, fmt.Errorf("line %d: %w", d.line+1, err)
	}
	return Record{}, io.EOF
}

// Decode reads every record of r.
func Decode(r io.Reader) ([]Record, error) {
	d := NewDecoder(r)
	var out []Record
	for {
		rec, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
