// Package gputest opens a GPU for tests or skips them. GPU tests skip everywhere a GPU is
// missing, CI included (it has none); `make gpu-test` builds them for a GPU machine.
package gputest

import (
	"errors"
	"testing"

	"github.com/daqiri-go/daqiri/cudart"
)

// Device opens GPU 0 or skips the test, naming what is missing; the device is closed at
// cleanup. (cudart's own tests keep an equivalent helper: they cannot import this package,
// which imports cudart.)
func Device(t testing.TB) *cudart.Device {
	t.Helper()
	d, err := cudart.Open()
	if errors.Is(err, cudart.ErrNoDriver) {
		t.Skip("no NVIDIA driver (libcuda.so.1)")
	}
	if errors.Is(err, cudart.ResultNoDevice) || errors.Is(err, cudart.ResultStubLibrary) {
		t.Skipf("no usable CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return dev
}
