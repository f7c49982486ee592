package executor

import (
	"context"
	"strconv"
	"time"
)

// StepsHandler returns the stage handler `redstate serve --demo` registers as "steps", for
// trying the executor without writing one: each stage takes per (so a running task can be
// watched, paused and resumed), then records in the context when it finished (key: the stage's
// name) and how many stages the task has finished ("stagesDone"). A stage whose context ends
// first (cancel, lost lock, shutdown) fails with the context's error.
func StepsHandler(per time.Duration) StageHandler {
	return func(ctx context.Context, req StageRequest) (map[string]string, error) {
		timer := time.NewTimer(per)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		out := make(map[string]string, len(req.ContextData)+2)
		for k, v := range req.ContextData {
			out[k] = v
		}
		out[req.Stage] = time.Now().UTC().Format(time.RFC3339)
		out["stagesDone"] = strconv.Itoa(req.StageIndex + 1)
		return out, nil
	}
}
