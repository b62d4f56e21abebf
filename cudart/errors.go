package cudart

import "fmt"

// Result is a CUresult, the status every driver API call returns. A Result is an error so
// that errors.Is(err, cudart.ResultOutOfMemory) works on any *Error.
type Result int32

// Results callers may want to test for. Values from enum cudaError_enum in cuda.h (CUDA
// 12.6, lines 2348-2976); the driver's own name for any code is in Error.Name.
const (
	ResultSuccess                     Result = 0   // CUDA_SUCCESS
	ResultInvalidValue                Result = 1   // CUDA_ERROR_INVALID_VALUE
	ResultOutOfMemory                 Result = 2   // CUDA_ERROR_OUT_OF_MEMORY
	ResultNotInitialized              Result = 3   // CUDA_ERROR_NOT_INITIALIZED
	ResultDeinitialized               Result = 4   // CUDA_ERROR_DEINITIALIZED
	ResultStubLibrary                 Result = 34  // CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not the driver
	ResultNoDevice                    Result = 100 // CUDA_ERROR_NO_DEVICE
	ResultInvalidDevice               Result = 101 // CUDA_ERROR_INVALID_DEVICE
	ResultInvalidImage                Result = 200 // CUDA_ERROR_INVALID_IMAGE
	ResultInvalidContext              Result = 201 // CUDA_ERROR_INVALID_CONTEXT
	ResultInvalidPTX                  Result = 218 // CUDA_ERROR_INVALID_PTX
	ResultUnsupportedPTXVersion       Result = 222 // CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX newer than the driver
	ResultInvalidHandle               Result = 400 // CUDA_ERROR_INVALID_HANDLE
	ResultNotFound                    Result = 500 // CUDA_ERROR_NOT_FOUND (e.g. no such kernel in a module)
	ResultNotReady                    Result = 600 // CUDA_ERROR_NOT_READY
	ResultIllegalAddress              Result = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
	ResultLaunchOutOfResources        Result = 701 // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
	ResultHostMemoryAlreadyRegistered Result = 712 // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
	ResultHostMemoryNotRegistered     Result = 713 // CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
	ResultLaunchFailed                Result = 719 // CUDA_ERROR_LAUNCH_FAILED
	ResultNotPermitted                Result = 800 // CUDA_ERROR_NOT_PERMITTED
	ResultNotSupported                Result = 801 // CUDA_ERROR_NOT_SUPPORTED
	ResultUnknown                     Result = 999 // CUDA_ERROR_UNKNOWN
)

// Error describes the result code only; the driver's name and text for it are in Error,
// which needs the loaded library to look them up.
func (r Result) Error() string { return fmt.Sprintf("CUDA result %d", int32(r)) }

// Error is a failed driver call: what was attempted, the CUresult, and the driver's own name
// (cuGetErrorName) and description (cuGetErrorString) of it.
type Error struct {
	Op   string // the call and what it was given, e.g. "cuMemAlloc(1048576 bytes, GPU 0)"
	Code Result
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"; empty if the driver does not know the code
	Text string // e.g. "out of memory"
}

// Error reads "cudart: <op>: <NAME> (<code>): <text>".
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "unknown CUDA result"
	}
	s := fmt.Sprintf("cudart: %s: %s (%d)", e.Op, name, int32(e.Code))
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// Unwrap exposes the Result, so errors.Is(err, ResultNotReady) and the like work.
func (e *Error) Unwrap() error { return e.Code }
