package mlx5dv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv/internal/mlx5abi"
)

// recorded is one ioctl as the kernel would have read it.
type recorded struct {
	object, method uint16
	driver         uint32
	attrs          []uapi.Attr
}

// fakeKernel is a context whose ioctls are recorded instead of issued; fail, when set, is
// the errno every call gets. It wraps errors as verbs does.
type fakeKernel struct {
	t      *testing.T
	driver string
	id     uint32
	fail   syscall.Errno
	log    []recorded
	live   int // objects tracked and not forgotten
}

func (k *fakeKernel) Mmap(int64, int) ([]byte, error) { return nil, unix.EBADF }
func (k *fakeKernel) Munmap([]byte) error             { return nil }
func (k *fakeKernel) PostSendDoorbell(uint32) error   { return unix.EBADF }
func (k *fakeKernel) Device() (string, string)        { return "fake0", k.driver }
func (k *fakeKernel) Begin() error                    { return nil }
func (k *fakeKernel) NewCall(object, method uint16) *uapi.Call {
	return uapi.NewCall(k.id, object, method)
}
func (k *fakeKernel) MmapProt(int64, int, int) ([]byte, error) { return nil, unix.EBADF }
func (k *fakeKernel) PD(pd any) (uint32, error)                { return 5, nil }
func (k *fakeKernel) Track(func()) func()                      { k.live++; return func() { k.live-- } }
func (k *fakeKernel) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &verbs.Error{Op: op, Device: "fake0", Errno: err.(syscall.Errno)}
}

func (k *fakeKernel) Do(call *uapi.Call) error {
	t := k.t
	b := call.Encode()
	ne := binary.NativeEndian
	r := recorded{object: ne.Uint16(b[2:]), method: ne.Uint16(b[4:]), driver: ne.Uint32(b[16:])}
	if int(ne.Uint16(b[0:])) != len(b) || int(ne.Uint16(b[6:]))*16+24 != len(b) {
		t.Errorf("call header length %d / %d attributes for %d bytes", ne.Uint16(b[0:]), ne.Uint16(b[6:]), len(b))
	}
	for i := 24; i < len(b); i += 16 {
		r.attrs = append(r.attrs, uapi.Attr{AttrID: ne.Uint16(b[i:]), Len: ne.Uint16(b[i+2:]), Flags: ne.Uint16(b[i+4:]), AttrData: ne.Uint16(b[i+6:]), Data: ne.Uint64(b[i+8:])})
	}
	k.log = append(k.log, r)
	if k.fail != 0 {
		return k.fail
	}
	return nil
}

// fakeDevX is a DevX on a fakeKernel.
func fakeDevX(t *testing.T, driver string, fail syscall.Errno) (*DevX, *fakeKernel) {
	t.Helper()
	id := uint32(mlx5abi.DriverMLX5)
	if driver != "mlx5" {
		id = mlx5abi.DriverRXE
	}
	k := &fakeKernel{t: t, driver: driver, id: id, fail: fail}
	return &DevX{k: k, mlx5: driver == "mlx5"}, k
}

// attrWant is how the kernel's method definition (devx.c, fs.c, qos.c, main.c) reads an
// attribute, in the headers' names: its id, its kind and, for data, its length as a C
// expression.
type attrWant struct {
	id   string
	kind string // new (IDR NEW), idr (IDR by handle), in (PTR_IN), const (CONST_IN/FLAGS_IN: a u64), out (PTR_OUT), fd (RAW_FD), enum (ENUM_IN)
	size string // in/out/enum: the length the kernel expects
	elem string // enum: the element
}

type callWant struct {
	object, method string
	attrs          []attrWant
}

var (
	u16 = "sizeof(__u16)"
	u32 = "sizeof(__u32)"
	u64 = "sizeof(__u64)"
	// Masks and values are one fte_match_param (0x200 bytes, MatchParamsSize), less than the
	// attribute's sizeof(struct mlx5_ib_match_params) maximum: the kernel copies them into a
	// struct mlx5_flow_spec that holds no more.
	mp = "(sizeof(struct mlx5_ib_match_params) - 0x80)"
)

// TestDevXEncodingsMatchHeaders runs every DevX method against a recording kernel and
// checks each call — object, method, driver id, attribute ids, kinds and lengths — against
// the kernel's method definitions written with the uapi headers' names, which gcc resolves.
func TestDevXEncodingsMatchHeaders(t *testing.T) {
	if guest.Active() {
		t.Skip("the header probe runs on the host")
	}
	d, k := fakeDevX(t, "mlx5", 0)
	log := &k.log
	in, out := make([]byte, 16+8*rand.IntN(30)), make([]byte, 16+8*rand.IntN(30))
	ctxIn := make([]byte, 48)
	encap := make([]byte, 50)
	cmdIn := fmt.Sprint(len(in))
	cmdOut := fmt.Sprint(len(out))

	var steps []callWant
	step := func(w callWant, f func() error) {
		t.Helper()
		before := len(*log)
		err := f()
		if err != nil && !strings.Contains(w.method, "UAR_OBJ_ALLOC") {
			t.Fatalf("%s: %v", w.method, err)
		}
		if len(*log) == before {
			t.Fatalf("%s issued no call", w.method)
		}
		steps = append(steps, w)
	}
	step(callWant{"MLX5_IB_OBJECT_DEVX", "MLX5_IB_METHOD_DEVX_OTHER", []attrWant{
		{"MLX5_IB_ATTR_DEVX_OTHER_CMD_IN", "in", cmdIn, ""}, {"MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT", "out", cmdOut, ""}}},
		func() error { return d.General(in, out) })
	var obj *DevXObj
	step(callWant{"MLX5_IB_OBJECT_DEVX_OBJ", "MLX5_IB_METHOD_DEVX_OBJ_CREATE", []attrWant{
		{"MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN", "in", cmdIn, ""},
		{"MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT", "out", cmdOut, ""}}},
		func() (err error) { obj, err = d.CreateObj(in, out); return })
	step(callWant{"MLX5_IB_OBJECT_DEVX_OBJ", "MLX5_IB_METHOD_DEVX_OBJ_MODIFY", []attrWant{
		{"MLX5_IB_ATTR_DEVX_OBJ_MODIFY_HANDLE", "idr", "", ""}, {"MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_IN", "in", cmdIn, ""},
		{"MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_OUT", "out", cmdOut, ""}}},
		func() error { return obj.Modify(in, out) })
	step(callWant{"MLX5_IB_OBJECT_DEVX_OBJ", "MLX5_IB_METHOD_DEVX_OBJ_QUERY", []attrWant{
		{"MLX5_IB_ATTR_DEVX_OBJ_QUERY_HANDLE", "idr", "", ""}, {"MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_IN", "in", cmdIn, ""},
		{"MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_OUT", "out", cmdOut, ""}}},
		func() error { return obj.Query(in, out) })
	step(callWant{"MLX5_IB_OBJECT_DEVX", "MLX5_IB_METHOD_DEVX_QUERY_EQN", []attrWant{
		{"MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC", "in", u32, ""}, {"MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN", "out", u32, ""}}},
		func() error { _, err := d.QueryEQN(3); return err })
	step(callWant{"MLX5_IB_OBJECT_DEVX", "MLX5_IB_METHOD_DEVX_QUERY_UAR", []attrWant{
		{"MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX", "in", u32, ""}, {"MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX", "out", u32, ""}}},
		func() error { _, err := d.QueryUAR(1); return err })
	mem := make([]byte, 4096)
	var umem *UMEM
	umemAttrs := []attrWant{
		{"MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR", "in", u64, ""},
		{"MLX5_IB_ATTR_DEVX_UMEM_REG_LEN", "in", u64, ""}, {"MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS", "const", "", ""},
		{"MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID", "out", u32, ""}}
	step(callWant{"MLX5_IB_OBJECT_DEVX_UMEM", "MLX5_IB_METHOD_DEVX_UMEM_REG", umemAttrs},
		func() (err error) { umem, err = d.RegUMEM(mem, verbs.AccessLocalWrite); return })
	step(callWant{"MLX5_IB_OBJECT_DEVX_UMEM", "MLX5_IB_METHOD_DEVX_UMEM_REG", append(append([]attrWant(nil), umemAttrs...),
		attrWant{"MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD", "fd", "", ""})},
		func() error { _, err := d.RegUMEMDMABuf(7, 0, 1<<20, verbs.AccessLocalWrite); return err })
	step(callWant{"MLX5_IB_OBJECT_DEVX_UMEM", "MLX5_IB_METHOD_DEVX_UMEM_DEREG", []attrWant{
		{"MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE", "idr", "", ""}}},
		func() error { return umem.Close() })
	// The UAR's mmap fails on the fake fd, so the page is destroyed again: two calls.
	step(callWant{"MLX5_IB_OBJECT_UAR", "MLX5_IB_METHOD_UAR_OBJ_ALLOC", []attrWant{
		{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE", "const", "", ""},
		{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET", "out", u64, ""}, {"MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH", "out", u32, ""},
		{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID", "out", u32, ""}}},
		func() error {
			_, err := d.AllocUAR(UARTypeBF)
			if err == nil {
				return errors.New("UAR mapped on a fake fd")
			}
			return err
		})
	steps = append(steps, callWant{"MLX5_IB_OBJECT_UAR", "MLX5_IB_METHOD_UAR_OBJ_DESTROY", []attrWant{
		{"MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE", "idr", "", ""}}})
	pd := &verbs.PD{} // the fake kernel answers handle 5
	step(callWant{"UVERBS_OBJECT_PD", "MLX5_IB_METHOD_PD_QUERY", []attrWant{
		{"MLX5_IB_ATTR_QUERY_PD_HANDLE", "idr", "", ""}, {"MLX5_IB_ATTR_QUERY_PD_RESP_PDN", "out", u32, ""}}},
		func() error { _, err := d.PDN(pd); return err })
	var m *FlowMatcher
	step(callWant{"MLX5_IB_OBJECT_FLOW_MATCHER", "MLX5_IB_METHOD_FLOW_MATCHER_CREATE", []attrWant{
		{"MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK", "in", mp, ""},
		{"MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE", "enum", u16, "MLX5_IB_FLOW_TYPE_NORMAL"},
		{"MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA", "in", "sizeof(__u8)", ""}, {"MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE", "const", "", ""}}},
		func() (err error) {
			m, err = d.CreateFlowMatcher(MatcherSpec{Mask: make([]byte, 16), CriteriaEnable: 1})
			return
		})
	var act *FlowAction
	step(callWant{"UVERBS_OBJECT_FLOW_ACTION", "MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT", []attrWant{
		{"MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_TYPE", "const", "", ""},
		{"MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_FT_TYPE", "const", "", ""}, {"MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_DATA_BUF", "in", fmt.Sprint(len(encap)), ""}}},
		func() (err error) {
			act, err = d.CreatePacketReformat(ReformatL2ToL2Tunnel, FlowTableNICTX, encap)
			return
		})
	var fl *Flow
	step(callWant{"UVERBS_OBJECT_FLOW", "MLX5_IB_METHOD_CREATE_FLOW", []attrWant{
		{"MLX5_IB_ATTR_CREATE_FLOW_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE", "in", mp, ""},
		{"MLX5_IB_ATTR_CREATE_FLOW_MATCHER", "idr", "", ""}, {"MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX", "idr", "", ""},
		{"MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS", "in", "2 * sizeof(__u32)", ""}, {"MLX5_IB_ATTR_CREATE_FLOW_TAG", "in", u32, ""}}},
		func() (err error) {
			fl, err = m.CreateFlow(FlowSpec{Value: make([]byte, 8), Dest: obj, Tag: 7, HasTag: true, Actions: []*FlowAction{act, act}})
			return
		})
	step(callWant{"UVERBS_OBJECT_FLOW", "MLX5_IB_METHOD_CREATE_FLOW", []attrWant{
		{"MLX5_IB_ATTR_CREATE_FLOW_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE", "in", mp, ""},
		{"MLX5_IB_ATTR_CREATE_FLOW_MATCHER", "idr", "", ""}, {"MLX5_IB_ATTR_CREATE_FLOW_FLAGS", "const", "", ""}}},
		func() error { _, err := m.CreateFlow(FlowSpec{Drop: true}); return err })
	step(callWant{"UVERBS_OBJECT_FLOW", "MLX5_IB_METHOD_DESTROY_FLOW", []attrWant{{"MLX5_IB_ATTR_DESTROY_FLOW_HANDLE", "idr", "", ""}}},
		func() error { return fl.Close() })
	step(callWant{"UVERBS_OBJECT_FLOW_ACTION", "UVERBS_METHOD_FLOW_ACTION_DESTROY", []attrWant{{"UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE", "idr", "", ""}}},
		func() error { return act.Close() })
	step(callWant{"MLX5_IB_OBJECT_FLOW_MATCHER", "MLX5_IB_METHOD_FLOW_MATCHER_DESTROY", []attrWant{{"MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE", "idr", "", ""}}},
		func() error { return m.Close() })
	var pp *PP
	step(callWant{"MLX5_IB_OBJECT_PP", "MLX5_IB_METHOD_PP_OBJ_ALLOC", []attrWant{
		{"MLX5_IB_ATTR_PP_OBJ_ALLOC_HANDLE", "new", "", ""}, {"MLX5_IB_ATTR_PP_OBJ_ALLOC_CTX", "in", fmt.Sprint(len(ctxIn)), ""},
		{"MLX5_IB_ATTR_PP_OBJ_ALLOC_FLAGS", "const", "", ""}, {"MLX5_IB_ATTR_PP_OBJ_ALLOC_INDEX", "out", u16, ""}}},
		func() (err error) { pp, err = d.AllocPP(ctxIn, true); return })
	step(callWant{"MLX5_IB_OBJECT_PP", "MLX5_IB_METHOD_PP_OBJ_DESTROY", []attrWant{{"MLX5_IB_ATTR_PP_OBJ_DESTROY_HANDLE", "idr", "", ""}}},
		func() error { return pp.Close() })
	step(callWant{"MLX5_IB_OBJECT_DEVX_OBJ", "MLX5_IB_METHOD_DEVX_OBJ_DESTROY", []attrWant{{"MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE", "idr", "", ""}}},
		func() error { return obj.Destroy() })

	if len(steps) != len(*log) {
		t.Fatalf("%d calls recorded for %d expected", len(*log), len(steps))
	}
	// Resolve every C name and size in one probe.
	exprs := []string{"RDMA_DRIVER_MLX5"}
	for _, s := range steps {
		exprs = append(exprs, s.object, s.method)
		for _, a := range s.attrs {
			exprs = append(exprs, a.id)
			if a.size != "" {
				exprs = append(exprs, a.size)
			}
			if a.elem != "" {
				exprs = append(exprs, a.elem)
			}
		}
	}
	vals := testutil.CProbe(t, "Debian: apt-get install linux-libc-dev", mlx5abi.ProbeHeaders(), exprs)
	v := func() uint64 { x := vals[0]; vals = vals[1:]; return x }
	driver := v()
	for i, s := range steps {
		r := (*log)[i]
		obj, meth := v(), v()
		where := fmt.Sprintf("call %d (%s)", i, s.method)
		if uint64(r.object) != obj || uint64(r.method) != meth || uint64(r.driver) != driver {
			t.Errorf("%s: object %#x method %#x driver %d, headers say %s=%#x %s=%#x RDMA_DRIVER_MLX5=%d", where, r.object, r.method, r.driver, s.object, obj, s.method, meth, driver)
		}
		if len(r.attrs) != len(s.attrs) {
			t.Errorf("%s: %d attributes, want %d", where, len(r.attrs), len(s.attrs))
		}
		for j, a := range s.attrs {
			id := v()
			var size, elem uint64
			if a.size != "" {
				size = v()
			}
			if a.elem != "" {
				elem = v()
			}
			if j >= len(r.attrs) {
				continue
			}
			g := r.attrs[j]
			aw := fmt.Sprintf("%s attr %s", where, a.id)
			if uint64(g.AttrID) != id {
				t.Errorf("%s: id %#x, header says %#x", aw, g.AttrID, id)
			}
			if g.Flags != uapi.AttrFMandatory {
				t.Errorf("%s: flags %#x", aw, g.Flags)
			}
			wantLen := uint64(0)
			switch a.kind {
			case "in", "out", "enum":
				wantLen = size
			case "const":
				wantLen = 8
			}
			if uint64(g.Len) != wantLen {
				t.Errorf("%s (%s): length %d, the kernel reads %d", aw, a.kind, g.Len, wantLen)
			}
			if a.kind == "enum" && uint64(g.AttrData) != elem {
				t.Errorf("%s: enum element %d, want %s=%d", aw, g.AttrData, a.elem, elem)
			}
			if a.kind != "enum" && g.AttrData != 0 {
				t.Errorf("%s: attr_data %d, must be 0", aw, g.AttrData)
			}
		}
	}
	t.Logf("%d DevX calls checked attribute by attribute against %d header values", len(steps), len(exprs))
}

// TestDevXBadInput: what the kernel would refuse is refused before any call, with the
// method named; a kernel error keeps its errno; a non-mlx5 device wraps ErrNotMLX5.
func TestDevXBadInput(t *testing.T) {
	d, k := fakeDevX(t, "mlx5", 0)
	log := &k.log
	cases := []struct {
		name string
		err  error
	}{
		{"DEVX_OTHER", d.General(make([]byte, 8), make([]byte, 16))},
		{"DEVX_OTHER", d.General(make([]byte, 16), make([]byte, MaxCommandSize+1))},
		{"DEVX_OBJ_CREATE", func() error { _, err := d.CreateObj(nil, nil); return err }()},
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEM(nil, 0); return err }()},
		{"DEVX_UMEM_REG", func() error { _, err := d.RegUMEMDMABuf(-1, 0, 10, 0); return err }()},
		{"matcher mask", func() error {
			_, err := d.CreateFlowMatcher(MatcherSpec{Mask: make([]byte, MatchParamsSize+1)})
			return err
		}()},
		{"PP_OBJ_ALLOC", func() error { _, err := d.AllocPP(nil, false); return err }()},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.name) {
			t.Errorf("want an error naming %s, got %v", c.name, c.err)
		}
	}
	m := &FlowMatcher{d: d}
	if _, err := m.CreateFlow(FlowSpec{}); err == nil {
		t.Error("a flow with neither destination nor drop was accepted")
	}
	if _, err := m.CreateFlow(FlowSpec{Drop: true, Dest: &DevXObj{}}); err == nil {
		t.Error("a flow with both destination and drop was accepted")
	}
	if len(*log) != 0 {
		t.Errorf("%d calls issued for bad input", len(*log))
	}

	d, _ = fakeDevX(t, "mlx5", unix.EREMOTEIO)
	err := d.General(make([]byte, 16), make([]byte, 16))
	if !errors.Is(err, unix.EREMOTEIO) || errors.Is(err, ErrNotMLX5) || !strings.Contains(err.Error(), "DEVX_OTHER") {
		t.Errorf("firmware failure = %v, want EREMOTEIO naming DEVX_OTHER", err)
	}

	// On rxe the kernel has no mlx5 methods: EPROTONOSUPPORT, reported as not mlx5.
	r, rk := fakeDevX(t, "rxe", unix.EPROTONOSUPPORT)
	rlog := &rk.log
	_, err = r.QueryEQN(0)
	if !errors.Is(err, ErrNotMLX5) || !errors.Is(err, unix.EPROTONOSUPPORT) || !strings.Contains(err.Error(), "DEVX_QUERY_EQN") {
		t.Errorf("QueryEQN on rxe = %v, want ErrNotMLX5 with EPROTONOSUPPORT naming the method", err)
	}
	if (*rlog)[0].driver != mlx5abi.DriverRXE {
		t.Errorf("call on rxe named driver %d, want rxe's %d (the kernel refuses another)", (*rlog)[0].driver, mlx5abi.DriverRXE)
	}
}

// TestDevXUARStores: Write64/Write32 store big-endian in one access; a store outside the
// page panics with the offset (a programming error, like a slice index). The stand-in page
// starts at addresses of every alignment: the stores are plain ones, which arm64 allows on
// normal memory at any address, not atomics (a store-release at an address that is not
// 8-byte aligned is SIGBUS there; it was, under qemu-aarch64).
func TestDevXUARStores(t *testing.T) {
	backing := make([]byte, 4096+8)
	for _, skew := range []int{0, 1, 4} {
		mem := backing[skew : skew+4096]
		u := &UARPage{mem: mem, PageID: 3}
		v := rand.Uint64()
		u.Write64(0x800, v)
		if got := binary.BigEndian.Uint64(mem[0x800:]); got != v {
			t.Errorf("skew %d: Write64 stored %#x, want %#x big-endian", skew, got, v)
		}
		u.Write32(0x20, uint32(v))
		if got := binary.BigEndian.Uint32(mem[0x20:]); got != uint32(v) {
			t.Errorf("skew %d: Write32 stored %#x, want %#x", skew, got, uint32(v))
		}
	}
	u := &UARPage{mem: backing[:4096], PageID: 3}
	for _, off := range []uint32{4096, 4, 1 << 31} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "offset") {
					t.Errorf("Write64 at %#x: recover() = %v", off, r)
				}
			}()
			u.Write64(off, 1)
		}()
	}
}

// TestDevXContextRequest: the GET_CONTEXT driver data asks for DevX with dynamic 4K UARs,
// and the response is read field by field.
func TestDevXContextRequest(t *testing.T) {
	c := &devxContext{}
	var req mlx5abi.MLX5AllocUcontextReqV2
	copy(uapi.Bytes(&req), c.DriverIn())
	if req.Flags&mlx5abi.MLX5AllocUctxDevX == 0 || req.LibCaps&mlx5abi.MLX5LibCapDynUAR == 0 || req.LibCaps&mlx5abi.MLX5LibCap4KUAR == 0 || req.MaxCQEVersion != 1 {
		t.Errorf("request %+v lacks DEVX, dynamic 4K UARs or CQE version 1", req)
	}
	resp := mlx5abi.MLX5AllocUcontextResp{CacheLineSize: 64, BfRegSize: 256, EthMinInline: 2, CompMask: mlx5abi.MLX5RespMaskRealTimeTS, NumDynBfregs: 1 << 14, LogUARSize: 12}
	if err := c.Attach(uapi.Bytes(&resp)); err != nil {
		t.Fatal(err)
	}
	i := c.info()
	if i.CacheLineSize != 64 || i.BFRegSize != 256 || i.EthMinInline != 2 || !i.RealTimeTS || i.HasCoreClockOffset || i.NumDynBFRegs != 1<<14 || i.LogUARSize != 12 {
		t.Errorf("info %+v from %+v", i, resp)
	}
	if _, err := c.NewCQ(1); !errors.Is(err, verbs.ErrNotSupported) {
		t.Errorf("NewCQ on a DevX context = %v, want verbs.ErrNotSupported", err)
	}
}

// TestMatchParamsSizeFitsTheKernel: masks and values are one fte_match_param (eight 64-byte
// match sets, mlx5_ifc.h), no longer than the ioctl attribute allows.
func TestMatchParamsSizeFitsTheKernel(t *testing.T) {
	if MatchParamsSize != 8*64 || MatchParamsSize > mlx5abi.MLX5MatchParamsSize {
		t.Fatalf("MatchParamsSize %#x: want 0x200 (fte_match_param), at most %#x (mlx5_ib_match_params)", MatchParamsSize, mlx5abi.MLX5MatchParamsSize)
	}
}
