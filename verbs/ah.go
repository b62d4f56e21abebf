package verbs

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/daqiri-go/daqiri/verbs/internal/uapi"
	"github.com/daqiri-go/daqiri/verbs/provider"
)

// AH is an address handle: the destination of UD sends. Put it in
// SendWR.AH.
type AH struct {
	pd     *PD
	handle uint32
	state  provider.AHState
	mu     sync.Mutex
	closed bool
}

// CreateAH creates an address handle in the PD. RoCE needs attr.IsGlobal,
// the destination GID and the source GID index.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	if err := pd.begin(); err != nil {
		return nil, err
	}
	st, err := pd.ctx.prov.NewAH()
	if err != nil {
		return nil, fmt.Errorf("verbs: provider AH on %s: %w", pd.ctx.dev.Name, err)
	}
	d := attr.dest()
	req := uapi.CreateAH{PDHandle: pd.handle, Attr: uapi.AHAttr{
		DGID: d.DGID, FlowLabel: d.FlowLabel, SGIDIndex: d.SGIDIndex, HopLimit: d.HopLimit,
		TrafficClass: d.TrafficClass, DLID: d.DLID, SL: d.SL, SrcPathBits: d.SrcPathBits,
		StaticRate: d.StaticRate, IsGlobal: d.IsGlobal, PortNum: d.PortNum,
	}}
	respLen := int(unsafe.Sizeof(uapi.CreateAHResp{}))
	resp, err := pd.ctx.write("write CREATE_AH", &uapi.Write{
		Command: uapi.CmdCreateAH, Req: uapi.Bytes(&req), DriverIn: st.DriverIn(),
		RespLen: respLen, DriverOut: st.DriverOutLen(),
	})
	if err != nil {
		return nil, err
	}
	var r uapi.CreateAHResp
	copy(uapi.Bytes(&r), resp)
	ah := &AH{pd: pd, handle: r.AHHandle, state: st}
	if err := st.Attach(r.AHHandle, resp[respLen:]); err != nil {
		_ = pd.ctx.destroy(uapi.ObjectAH, uapi.MethodAHDestroy, uapi.AttrDestroyAHHandle, r.AHHandle, "ioctl AH_DESTROY")
		return nil, fmt.Errorf("verbs: provider AH on %s: %w", pd.ctx.dev.Name, err)
	}
	pd.ctx.track(ah)
	return ah, nil
}

// Handle implements provider.AH: the kernel handle.
func (ah *AH) Handle() uint32 { return ah.handle }

// State implements provider.AH: the provider's state for the AH.
func (ah *AH) State() provider.AHState { return ah.state }

// Close destroys the AH.
func (ah *AH) Close() error {
	ah.mu.Lock()
	defer ah.mu.Unlock()
	if ah.closed {
		return nil
	}
	if err := ah.pd.ctx.begin(); err != nil {
		return err
	}
	if err := ah.pd.ctx.destroy(uapi.ObjectAH, uapi.MethodAHDestroy, uapi.AttrDestroyAHHandle, ah.handle, "ioctl AH_DESTROY"); err != nil {
		return err
	}
	ah.closed = true
	ah.pd.ctx.untrack(ah)
	return nil
}

func (ah *AH) release() {
	ah.mu.Lock()
	ah.closed = true
	ah.mu.Unlock()
}
