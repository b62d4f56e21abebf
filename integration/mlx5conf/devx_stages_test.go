package mlx5conf

import (
	"slices"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/mlx5/channel/trace"
)

// TestEngineStagesOnModel opens part (c)'s engine configuration on the in-process model
// (model:0, the same engine code over the model's channel) and checks that engineStages
// lists what the engine asks of its channel, in order, so that the guest's ratchet follows
// the engine as it changes.
func TestEngineStagesOnModel(t *testing.T) {
	if guest.Active() {
		t.Skip("a host test")
	}
	sess, err, records := openTraced(t, "model:0", t.TempDir())
	if err != nil {
		t.Fatalf("engine on model:0: %v", err)
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	recs, err := records()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if st := engineStageOf(r); st != "" && !slices.Contains(got, st) {
			got = append(got, st)
		}
	}
	want := slices.DeleteFunc(slices.Clone(engineStages), func(s string) bool {
		return s == stageEngineOpened || s == stageEngineClosed || s == stageTrafficSent || s == stageTrafficReceived
	})
	if !slices.Equal(got, want) {
		t.Errorf("the engine's calls on the model, first of each kind:\n  %s\nengineStages lists:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	s := newStageSet(engineStages)
	applyEngineTrace(s, recs)
	for _, st := range want {
		if !s.has(st) {
			t.Errorf("stage %q not reached on the model: %s", st, s.failed[st])
		}
	}
}

// TestApplyEngineTrace: a stage is reached when one of its calls succeeded, failed with the
// status, syndrome and error of its first failure otherwise; destroys and calls without a
// stage are ignored.
func TestApplyEngineTrace(t *testing.T) {
	s := newStageSet(engineStages)
	applyEngineTrace(s, []trace.Record{
		{Call: "create", Op: "ALLOC_PD", Status: "OK"},
		{Call: "create", Op: "CREATE_TIS", Status: "BAD_PARAM_ERR", Syndrome: 0x1234, Err: "refused"},
		{Call: "create", Op: "CREATE_CQ", Status: "OK"},
		{Call: "create", Op: "CREATE_CQ", Status: "BAD_PARAM_ERR", Err: "second"},
		{Call: "umem_reg", Err: "ioctl DEVX_UMEM_REG: EINVAL"},
		{Call: "destroy", Op: "DEALLOC_PD", Err: "gone"},
		{Call: "close"},
	})
	if !s.has("engine ALLOC_PD") || !s.has("engine CREATE_CQ") {
		t.Errorf("reached: %v", s.reached)
	}
	if f := s.failed["engine CREATE_TIS"]; !strings.Contains(f, "BAD_PARAM_ERR") || !strings.Contains(f, "0x1234") || !strings.Contains(f, "refused") {
		t.Errorf("CREATE_TIS failure %q", f)
	}
	if f := s.failed["engine umem_reg"]; !strings.Contains(f, "EINVAL") {
		t.Errorf("umem_reg failure %q", f)
	}
	if s.has("engine DEALLOC_PD") || s.failed["engine DEALLOC_PD"] != "" {
		t.Error("a destroy became a stage")
	}
}
