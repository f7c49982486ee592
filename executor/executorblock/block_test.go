package executorblock

import (
	"testing"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/executor"
)

// TestDirectLocks: the tenant locks autopipeline by default and send each script alone when
// lock-pipelining is off or when writes wait for replicas (redis.durability).
func TestDirectLocks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pipelining string
		replicas   int
		want       bool
	}{
		{"default", "", 0, false},
		{"auto", executor.LockPipeliningAuto, 0, false},
		{"batch", executor.LockPipeliningBatch, 0, false},
		{"off", executor.LockPipeliningOff, 0, true},
		{"auto with durability", executor.LockPipeliningAuto, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg executor.Config
			cfg.Persistence.Redis.LockPipelining = tc.pipelining
			env := component.Env{RedisWaitsForReplicas: tc.replicas > 0}
			if got := DirectLocks(cfg, env); got != tc.want {
				t.Errorf("DirectLocks = %v, want %v", got, tc.want)
			}
		})
	}
}
