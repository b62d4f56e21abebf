package reorder

import (
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// The conversions that write at least 4 bytes per input byte run wide_kernel (one warp per
// slot, spb ignored); reorder.cu's widening<IN, OUT> picks the same set, so a mismatch would
// launch a kernel with the wrong shape.
func TestWideningMatchesKernels(t *testing.T) {
	wide := map[[2]config.DataType]bool{
		{"int4", "fp16"}: true, {"int4", "bf16"}: true, {"int4", "fp32"}: true, {"int4", "fp64"}: true, {"int4", "int32"}: true,
		{"int8", "fp32"}: true, {"int8", "fp64"}: true, {"int8", "int32"}: true,
		{"int16", "fp64"}: true,
	}
	n := 0
	for _, in := range []config.DataType{"int4", "int8", "int16", "int32"} {
		for _, out := range []config.DataType{"fp16", "bf16", "fp32", "fp64", "int32"} {
			c, err := NewConversion(&config.DataTypes{Input: in, Output: out, Endianness: config.EndianNetwork})
			if err != nil {
				t.Fatalf("%s → %s: %v", in, out, err)
			}
			if got := widening(c); got != wide[[2]config.DataType{in, out}] {
				t.Errorf("widening(%s → %s) = %v", in, out, got)
			}
			n++
		}
	}
	if n != 20 {
		t.Fatalf("checked %d conversions, want 20", n)
	}
	if widening(Conversion{}) {
		t.Error("the plain copy is not a widening conversion")
	}
}
