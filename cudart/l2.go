package cudart

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/daqiri-go/daqiri/internal/dynlib"
)

// L2 persistence: a part of the L2 cache set aside for lines accessed as "persisting", which
// other accesses cannot evict. The set-aside is a context limit; which accesses persist is a
// stream attribute naming one address window.
const (
	limitPersistingL2 = 0x06 // CU_LIMIT_PERSISTING_L2_CACHE_SIZE (cuda.h, enum CUlimit_enum)
	// CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, which cuda.h also names
	// CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW (enum CUlaunchAttributeID).
	attrAccessPolicyWindow = 1
)

// Device attributes of the L2 cache (cuda.h, enum CUdevice_attribute_enum).
const (
	AttrL2CacheSize               Attribute = 38  // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, bytes
	AttrMaxPersistingL2CacheSize  Attribute = 108 // CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, bytes
	AttrMaxAccessPolicyWindowSize Attribute = 109 // CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, bytes
)

// AccessProperty is a CUaccessProperty: how L2 treats the lines of an access.
type AccessProperty int32

// Access properties (cuda.h, enum CUaccessProperty_enum).
const (
	AccessNormal     AccessProperty = 0 // CU_ACCESS_PROPERTY_NORMAL
	AccessStreaming  AccessProperty = 1 // CU_ACCESS_PROPERTY_STREAMING: likely evicted first
	AccessPersisting AccessProperty = 2 // CU_ACCESS_PROPERTY_PERSISTING: kept in the set-aside part
)

// accessPolicyWindow is CUaccessPolicyWindow (cuda.h): base_ptr, num_bytes, hitRatio,
// hitProp, missProp; 32 bytes on 64-bit hosts.
type accessPolicyWindow struct {
	base     uintptr
	bytes    uintptr
	hitRatio float32
	hitProp  int32
	missProp int32
	_        int32
}

// streamAttrValue is the CUstreamAttrValue union (CUlaunchAttributeValue, 64 bytes in
// cuda.h); the driver reads the member the attribute names.
type streamAttrValue struct {
	w accessPolicyWindow
	_ [64 - unsafe.Sizeof(accessPolicyWindow{})]byte
}

// SetPersistingL2 sets aside n bytes of the device's L2 for persisting accesses
// (cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)); 0 gives it back. The driver rounds n to
// its granularity and caps it at AttrMaxPersistingL2CacheSize; PersistingL2 reports the
// result. The set-aside is shared by everything running on the device's primary context.
func (dev *Device) SetPersistingL2(n int) error {
	if n < 0 {
		return fmt.Errorf("cudart: persisting L2 size %d", n)
	}
	if dev.d.f.cuCtxSetLimit == 0 {
		return fmt.Errorf("cudart: the driver has no cuCtxSetLimit")
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	return dev.d.checkf(dynlib.Call(dev.d.f.cuCtxSetLimit, limitPersistingL2, uintptr(n)), "cuCtxSetLimit(persisting L2, %d bytes)", n)
}

// PersistingL2 is the L2 set-aside in effect, in bytes (cuCtxGetLimit).
func (dev *Device) PersistingL2() (int, error) {
	if dev.d.f.cuCtxGetLimit == 0 {
		return 0, fmt.Errorf("cudart: the driver has no cuCtxGetLimit")
	}
	if err := dev.bind(); err != nil {
		return 0, err
	}
	defer dev.unbind()
	var v uintptr
	if err := dev.d.check(dynlib.Call(dev.d.f.cuCtxGetLimit, uintptr(unsafe.Pointer(&v)), limitPersistingL2), "cuCtxGetLimit(persisting L2)"); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetAccessPolicyWindow marks, for kernels launched on s from now on, the n bytes at base:
// a hitRatio share of their lines (0..1) get hit, the rest miss (cuStreamSetAttribute with
// CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW). n = 0 clears the window. Persisting lines
// need a set-aside (SetPersistingL2); n is capped by AttrMaxAccessPolicyWindowSize.
func (s *Stream) SetAccessPolicyWindow(base DevicePtr, n int, hitRatio float32, hit, miss AccessProperty) error {
	if err := s.live(); err != nil {
		return err
	}
	if n < 0 || hitRatio < 0 || hitRatio > 1 || math.IsNaN(float64(hitRatio)) {
		return fmt.Errorf("cudart: access policy window of %d bytes, hit ratio %v", n, hitRatio)
	}
	dev := s.dev
	if dev.d.f.cuStreamSetAttribute == 0 {
		return fmt.Errorf("cudart: the driver has no cuStreamSetAttribute")
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	var v streamAttrValue
	if n > 0 {
		v.w = accessPolicyWindow{base: uintptr(base), bytes: uintptr(n), hitRatio: hitRatio, hitProp: int32(hit), missProp: int32(miss)}
	}
	return dev.d.checkf(dynlib.Call(dev.d.f.cuStreamSetAttribute, s.h, attrAccessPolicyWindow, uintptr(unsafe.Pointer(&v))),
		"cuStreamSetAttribute(access policy window, %d bytes at %#x)", n, uintptr(base))
}
