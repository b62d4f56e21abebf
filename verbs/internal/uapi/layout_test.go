package uapi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/internal/testutil"
)

// Sizes and offsets as the C compiler lays out the Linux 6.1 UAPI headers
// (include/uapi/rdma/ib_user_verbs.h, ib_user_ioctl_verbs.h,
// rdma_user_ioctl_cmds.h) on x86-64 (gcc, offsetof/sizeof).
func TestLayoutsMatchKernelHeaders(t *testing.T) {
	sizes := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"ib_uverbs_ioctl_hdr", unsafe.Sizeof(IoctlHdr{}), 24},
		{"ib_uverbs_attr", unsafe.Sizeof(Attr{}), 16},
		{"ib_uverbs_cmd_hdr", unsafe.Sizeof(CmdHdr{}), 8},
		{"ib_uverbs_query_device_resp", unsafe.Sizeof(QueryDeviceResp{}), 176},
		{"ib_uverbs_query_port_resp_ex", unsafe.Sizeof(QueryPortRespEx{}), 48},
		{"ib_uverbs_gid_entry", unsafe.Sizeof(GIDEntry{}), 32},
		{"ib_uverbs_alloc_pd_resp", unsafe.Sizeof(AllocPDResp{}), 4},
		{"ib_uverbs_reg_mr", unsafe.Sizeof(RegMR{}), 40},
		{"ib_uverbs_reg_mr_resp", unsafe.Sizeof(RegMRResp{}), 12},
		{"ib_uverbs_create_comp_channel_resp", unsafe.Sizeof(CreateCompChannelResp{}), 4},
		{"ib_uverbs_ah_attr", unsafe.Sizeof(AHAttr{}), 32},
		{"ib_uverbs_create_ah", unsafe.Sizeof(CreateAH{}), 56},
		{"ib_uverbs_create_ah_resp", unsafe.Sizeof(CreateAHResp{}), 4},
		{"ib_uverbs_qp_dest", unsafe.Sizeof(QPDest{}), 32},
		{"ib_uverbs_modify_qp", unsafe.Sizeof(ModifyQP{}), 112},
		{"ib_uverbs_query_qp", unsafe.Sizeof(QueryQP{}), 16},
		{"ib_uverbs_query_qp_resp", unsafe.Sizeof(QueryQPResp{}), 128},
		{"ib_uverbs_post_send", unsafe.Sizeof(PostSend{}), 24},
		{"ib_uverbs_post_send_resp", unsafe.Sizeof(PostSendResp{}), 4},
		{"ib_uverbs_req_notify_cq", unsafe.Sizeof(ReqNotifyCQ{}), 8},
		{"ib_uverbs_qp_cap", unsafe.Sizeof(QPCap{}), 20},
		{"ib_uverbs_destroy_cq_resp", unsafe.Sizeof(DestroyCQResp{}), 8},
		{"ib_uverbs_destroy_qp_resp", unsafe.Sizeof(DestroyQPResp{}), 4},
		{"ib_uverbs_async_event_desc", unsafe.Sizeof(AsyncEventDesc{}), 16},
		{"ib_uverbs_comp_event_desc", unsafe.Sizeof(CompEventDesc{}), 8},
		{"ib_uverbs_wc", unsafe.Sizeof(WC{}), 48},
		{"ib_uverbs_qp_attr", unsafe.Sizeof(QPAttr{}), 144},
	}
	for _, s := range sizes {
		if s.got != s.want {
			t.Errorf("sizeof(%s) = %d, want %d", s.name, s.got, s.want)
		}
	}
	var dq QueryDeviceResp
	var pr QueryPortRespEx
	var ah CreateAH
	var mq ModifyQP
	var qr QueryQPResp
	var wc WC
	var qa QPAttr
	offs := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"query_device_resp.max_qp", unsafe.Offsetof(dq.MaxQP), 52},
		{"query_device_resp.max_pkeys", unsafe.Offsetof(dq.MaxPKeys), 168},
		{"query_device_resp.phys_port_cnt", unsafe.Offsetof(dq.PhysPortCnt), 171},
		{"query_port_resp.state", unsafe.Offsetof(pr.State), 26},
		{"query_port_resp.link_layer", unsafe.Offsetof(pr.LinkLayer), 37},
		{"query_port_resp_ex.port_cap_flags2", unsafe.Offsetof(pr.PortCapFlags2), 40},
		{"create_ah.attr", unsafe.Offsetof(ah.Attr), 24},
		{"modify_qp.qp_handle", unsafe.Offsetof(mq.QPHandle), 64},
		{"modify_qp.qp_state", unsafe.Offsetof(mq.QPState), 96},
		{"modify_qp.alt_timeout", unsafe.Offsetof(mq.AltTimeout), 109},
		{"query_qp_resp.qp_state", unsafe.Offsetof(qr.QPState), 108},
		{"query_qp_resp.sq_sig_all", unsafe.Offsetof(qr.SQSigAll), 122},
		{"wc.qp_num", unsafe.Offsetof(wc.QPNum), 28},
		{"wc.wc_flags", unsafe.Offsetof(wc.WCFlags), 36},
		{"wc.port_num", unsafe.Offsetof(wc.PortNum), 46},
		{"qp_attr.qp_access_flags", unsafe.Offsetof(qa.QPAccessFlags), 36},
		{"qp_attr.ah_attr", unsafe.Offsetof(qa.AHAttr), 40},
		{"qp_attr.alt_ah_attr", unsafe.Offsetof(qa.AltAHAttr), 72},
		{"qp_attr.max_send_wr", unsafe.Offsetof(qa.MaxSendWR), 104},
		{"qp_attr.pkey_index", unsafe.Offsetof(qa.PKeyIndex), 124},
		{"qp_attr.en_sqd_async_notify", unsafe.Offsetof(qa.EnSQDAsyncNotify), 128},
		{"qp_attr.min_rnr_timer", unsafe.Offsetof(qa.MinRNRTimer), 132},
		{"qp_attr.alt_timeout", unsafe.Offsetof(qa.AltTimeout), 138},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("offsetof(%s) = %d, want %d", o.name, o.got, o.want)
		}
	}
}

func TestIoctlNumber(t *testing.T) {
	// _IOWR(type, nr, size) = (3 << 30) | (size << 16) | (type << 8) | nr
	want := uint32(3<<30 | 24<<16 | 0x1b<<8 | 1)
	if RDMAVerbsIoctl != want {
		t.Fatalf("RDMA_VERBS_IOCTL = %#x, want %#x", RDMAVerbsIoctl, want)
	}
}

func TestCallEncoding(t *testing.T) {
	ne := binary.NativeEndian
	driver := rand.Uint32()
	c := NewCall(driver, ObjectQP, MethodQPCreate)
	h := c.NewIDR(AttrCreateQPHandle)
	pd := rand.Uint32()
	c.IDR(AttrCreateQPPDHandle, pd)
	user := rand.Uint64()
	c.U64(AttrCreateQPUserHandle, user)
	capIn := QPCap{MaxSendWR: rand.Uint32(), MaxRecvWR: 2, MaxSendSGE: 3, MaxRecvSGE: 4, MaxInlineData: 5}
	c.In(AttrCreateQPCap, Bytes(&capIn)) // 20 bytes: by pointer
	small := []byte{9, 8, 7}
	c.In(AttrUHWIn, small) // 3 bytes: inline
	out := make([]byte, 32)
	c.Out(AttrUHWOut, out)
	c.FD(AttrCreateQPEventFD, 7)

	b := c.Encode()
	if len(b) != 24+7*16 {
		t.Fatalf("encoded %d bytes, want %d", len(b), 24+7*16)
	}
	if ne.Uint16(b[0:]) != uint16(len(b)) || ne.Uint16(b[2:]) != ObjectQP || ne.Uint16(b[4:]) != MethodQPCreate || ne.Uint16(b[6:]) != 7 {
		t.Fatalf("header % x", b[:8])
	}
	if ne.Uint64(b[8:]) != 0 || ne.Uint32(b[16:]) != driver || ne.Uint32(b[20:]) != 0 {
		t.Fatalf("header reserved/driver_id % x", b[8:24])
	}
	attr := func(i int) (id, l, flags, ad uint16, data uint64) {
		a := b[24+16*i:]
		return ne.Uint16(a), ne.Uint16(a[2:]), ne.Uint16(a[4:]), ne.Uint16(a[6:]), ne.Uint64(a[8:])
	}
	check := func(i int, wid, wl, wflags uint16, wdata uint64) {
		t.Helper()
		id, l, flags, ad, data := attr(i)
		if id != wid || l != wl || flags != wflags || ad != 0 || data != wdata {
			t.Errorf("attr %d = {id %#x len %d flags %#x data_aux %d data %#x}, want {%#x %d %#x 0 %#x}", i, id, l, flags, ad, data, wid, wl, wflags, wdata)
		}
	}
	check(h, AttrCreateQPHandle, 0, AttrFMandatory, 0)
	check(1, AttrCreateQPPDHandle, 0, AttrFMandatory, uint64(pd))
	check(2, AttrCreateQPUserHandle, 8, AttrFMandatory, user)
	check(3, AttrCreateQPCap, 20, AttrFMandatory, uint64(uintptr(unsafe.Pointer(&capIn))))
	check(4, AttrUHWIn, 3, AttrFMandatory, uint64(9|8<<8|7<<16))
	check(5, AttrUHWOut, 32, AttrFMandatory, uint64(uintptr(unsafe.Pointer(&out[0]))))
	check(6, AttrCreateQPEventFD, 0, AttrFMandatory, 7)

	// An 8-byte input is still inline; 9 bytes go by pointer.
	c2 := NewCall(0, ObjectDevice, MethodQueryPort)
	eight := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	nine := make([]byte, 9)
	c2.In(1, eight)
	c2.OptionalIn(2, nine)
	b2 := c2.Encode()
	if got := ne.Uint64(b2[24+8:]); got != ne.Uint64(eight) {
		t.Errorf("8-byte input data %#x, want inline %#x", got, ne.Uint64(eight))
	}
	if got := ne.Uint64(b2[40+8:]); got != uint64(uintptr(unsafe.Pointer(&nine[0]))) {
		t.Errorf("9-byte input data %#x, want its address", got)
	}
	if f := ne.Uint16(b2[40+4:]); f != 0 {
		t.Errorf("optional attribute flags %#x, want 0", f)
	}
}

func TestWriteEncoding(t *testing.T) {
	ne := binary.NativeEndian
	req := RegMR{Start: rand.Uint64(), Length: rand.Uint64(), HCAVA: rand.Uint64(), PDHandle: rand.Uint32(), AccessFlags: 7}
	w := &Write{Command: CmdRegMR, Req: Bytes(&req), DriverIn: make([]byte, 8), RespLen: 12, DriverOut: 4}
	cmd, resp := w.Encode()
	if len(cmd) != 8+40+8 || len(resp) != 16 {
		t.Fatalf("command %d bytes, response %d; want 56 and 16", len(cmd), len(resp))
	}
	if ne.Uint32(cmd) != CmdRegMR || ne.Uint16(cmd[4:]) != 56/4 || ne.Uint16(cmd[6:]) != 16/4 {
		t.Fatalf("header % x", cmd[:8])
	}
	if got := ne.Uint64(cmd[8:]); got != uint64(uintptr(unsafe.Pointer(&resp[0]))) {
		t.Fatalf("response pointer %#x, want the response buffer", got)
	}
	if !bytes.Equal(cmd[16:48], Bytes(&req)[8:]) {
		t.Fatal("request body was not copied after the response pointer")
	}
	// Without a response the request is copied verbatim.
	rn := ReqNotifyCQ{CQHandle: rand.Uint32(), SolicitedOnly: 1}
	cmd, resp = (&Write{Command: CmdReqNotifyCQ, Req: Bytes(&rn)}).Encode()
	if resp != nil || len(cmd) != 16 || ne.Uint16(cmd[4:]) != 4 || ne.Uint16(cmd[6:]) != 0 || !bytes.Equal(cmd[8:], Bytes(&rn)) {
		t.Fatalf("REQ_NOTIFY_CQ encoded % x", cmd)
	}
}

func TestBadSizesAndFDs(t *testing.T) {
	if _, err := (&Write{Command: 1, Req: make([]byte, 6)}).Do(-1); err == nil {
		t.Error("a request not a multiple of 4 bytes was accepted")
	}
	if _, err := (&Write{Command: 1, Req: make([]byte, 8)}).Do(-1); !errors.Is(err, unix.EBADF) {
		t.Errorf("write on fd -1 = %v, want EBADF", err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Run("ioctl on /dev/null", func(t *testing.T) {
		err := NewCall(0, ObjectDevice, MethodGetContext).Do(int(f.Fd()))
		if errors.Is(err, unix.ENOSYS) {
			testutil.Lacks(t, "the RDMA_VERBS_IOCTL ioctl (qemu-user passes only the ioctls it knows)", err)
		}
		if !errors.Is(err, unix.ENOTTY) {
			t.Errorf("RDMA_VERBS_IOCTL on %s = %v, want ENOTTY", os.DevNull, err)
		}
	})
	c := NewCall(0, ObjectDevice, MethodGetContext)
	for range MaxAttrs + 1 {
		c.U32(0, 0)
	}
	if err := c.Do(int(f.Fd())); err == nil {
		t.Error("a call with too many attributes was issued")
	}
}
