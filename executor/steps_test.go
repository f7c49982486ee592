package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
)

func TestStepsHandler_RecordsEachStageAndHonoursCancel(t *testing.T) {
	h := executor.StepsHandler(time.Millisecond)
	out, err := h(t.Context(), executor.StageRequest{Stage: "s1", StageIndex: 1, ContextData: map[string]string{"s0": "earlier"}})
	if err != nil || out["s0"] != "earlier" || out["s1"] == "" || out["stagesDone"] != "2" {
		t.Fatalf("stage s1: %v, %v", out, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := executor.StepsHandler(time.Hour)(ctx, executor.StageRequest{Stage: "s0"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled stage: %v", err)
	}
}
