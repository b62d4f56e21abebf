package mlx5abi

import (
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
)

const probeHint = "Debian: apt-get install linux-libc-dev"

// probeStructs are the Go mirrors marked `C: struct NAME`; a marked type missing here fails
// the test, so none escapes the check.
var probeStructs = map[string]reflect.Type{
	"MLX5AllocUcontextReqV2": reflect.TypeOf(MLX5AllocUcontextReqV2{}),
	"MLX5AllocUcontextResp":  reflect.TypeOf(MLX5AllocUcontextResp{}),
	"MLX5ClockInfo":          reflect.TypeOf(MLX5ClockInfo{}),
}

var cMark = regexp.MustCompile(`\bC:\s*(struct\s+[A-Za-z_][A-Za-z0-9_]*|sizeof\(struct [A-Za-z_][A-Za-z0-9_]*\)|[A-Za-z_][A-Za-z0-9_]*)`)

func cName(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	for _, c := range cg.List {
		if m := cMark.FindStringSubmatch(c.Text); m != nil {
			return m[1]
		}
	}
	return ""
}

// probeFact is one value the Go source states and the headers must agree with.
type probeFact struct {
	where string
	expr  string // C expression
	want  uint64 // the Go value
}

// collectMLX5Facts reads mlx5.go: every constant with a C: comment, every struct with a
// `C: struct` doc and each of its fields' offset and size.
func collectMLX5Facts(t *testing.T) []probeFact {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "mlx5.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.Default()}
	if _, err := conf.Check("mlx5abi", fset, []*ast.File{f}, info); err != nil {
		t.Fatalf("type-checking mlx5.go: %v", err)
	}
	var facts []probeFact
	pos := func(p token.Pos) string { return fmt.Sprintf("mlx5.go:%d", fset.Position(p).Line) }
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				name := cName(s.Comment)
				if name == "" {
					name = cName(s.Doc)
				}
				if name == "" {
					if gd.Tok == token.CONST && !strings.HasSuffix(s.Names[0].Name, "Shift") {
						t.Errorf("%s: constant %s has no `// C: NAME` comment, so nothing checks it", pos(s.Pos()), s.Names[0].Name)
					}
					continue
				}
				c := info.Defs[s.Names[0]].(*types.Const)
				v, ok := constant.Uint64Val(c.Val())
				if !ok {
					t.Fatalf("%s: %s is not an unsigned constant", pos(s.Pos()), s.Names[0].Name)
				}
				facts = append(facts, probeFact{pos(s.Pos()) + " " + s.Names[0].Name, name, v})
			case *ast.TypeSpec:
				doc := s.Doc
				if doc == nil {
					doc = gd.Doc
				}
				cs := cName(doc)
				if !strings.HasPrefix(cs, "struct ") {
					continue
				}
				rt, ok := probeStructs[s.Name.Name]
				if !ok {
					t.Errorf("%s: %s is marked C: %s but missing from probeStructs", pos(s.Pos()), s.Name.Name, cs)
					continue
				}
				st := s.Type.(*ast.StructType)
				facts = append(facts, probeFact{pos(s.Pos()) + " sizeof " + s.Name.Name, "sizeof(" + cs + ")", uint64(rt.Size())})
				for _, fl := range st.Fields.List {
					cf := cName(fl.Comment)
					if cf == "" {
						t.Errorf("%s: field %s.%s has no `// C: member` comment", pos(fl.Pos()), s.Name.Name, fl.Names[0].Name)
						continue
					}
					sf, _ := rt.FieldByName(fl.Names[0].Name)
					w := pos(fl.Pos()) + " " + s.Name.Name + "." + sf.Name
					facts = append(facts,
						probeFact{w + " offset", fmt.Sprintf("offsetof(%s, %s)", cs, cf), uint64(sf.Offset)},
						probeFact{w + " size", fmt.Sprintf("sizeof(((%s *)0)->%s)", cs, cf), uint64(sf.Type.Size())})
				}
			}
		}
	}
	return facts
}

// TestMLX5ABIMatchesHeaders compares every id, flag and structure of mlx5.go with what gcc
// makes of the installed uapi headers.
func TestMLX5ABIMatchesHeaders(t *testing.T) {
	if guest.Active() {
		t.Skip("the header probe runs on the host (gcc under the VM's emulated CPU is slow)")
	}
	if _, err := os.Stat("mlx5.go"); err != nil {
		t.Fatalf("run from the package folder: %v", err)
	}
	facts := collectMLX5Facts(t)
	if len(facts) < 100 {
		t.Fatalf("only %d facts collected from mlx5.go; the parser missed the C: marks", len(facts))
	}
	exprs := make([]string, len(facts))
	for i, f := range facts {
		exprs[i] = f.expr
	}
	got := testutil.CProbe(t, probeHint, ProbeHeaders(), exprs)
	bad := 0
	for i, f := range facts {
		if got[i] != f.want {
			bad++
			t.Errorf("%s = %#x, but the headers say %s = %#x", f.where, f.want, f.expr, got[i])
		}
	}
	t.Logf("%d facts of mlx5.go checked against %s, %d differ", len(facts), strings.Join(ProbeHeaders(), ", "), bad)
}

// TestEnumAndHandles: an ENUM_IN's element is attr_data's first byte with its data inline; an
// IDRS array of two handles is 8 bytes inline, of three a pointer to 12 bytes.
func TestEnumAndHandles(t *testing.T) {
	c := uapi.NewCall(DriverMLX5, MLX5ObjectFlowMatcher, MLX5MethodFlowMatcherCreate)
	c.Enum(MLX5AttrFlowMatcherFlowType, 3, []byte{0x34, 0x12})
	c.Handles(MLX5AttrCreateFlowArrFlowActions, []uint32{7, 9})
	c.Handles(MLX5AttrCreateFlowArrCounters, []uint32{1, 2, 3})
	b := c.Encode()
	a0 := b[24:40]
	if a0[6] != 3 || a0[7] != 0 || binary.NativeEndian.Uint16(a0[2:]) != 2 || binary.NativeEndian.Uint16(a0[8:]) != 0x1234 {
		t.Errorf("ENUM_IN attribute % x", a0)
	}
	a1 := b[40:56]
	if binary.NativeEndian.Uint16(a1[2:]) != 8 || binary.NativeEndian.Uint32(a1[8:]) != 7 || binary.NativeEndian.Uint32(a1[12:]) != 9 {
		t.Errorf("two handles % x", a1)
	}
	a2 := b[56:72]
	if binary.NativeEndian.Uint16(a2[2:]) != 12 || binary.NativeEndian.Uint64(a2[8:]) == 0 {
		t.Errorf("three handles % x: want 12 bytes by pointer", a2)
	}
}
