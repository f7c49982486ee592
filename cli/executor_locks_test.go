package cli

import (
	"testing"

	"github.com/redstate/redstate/config"
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
		{"off", executor.LockPipeliningOff, 0, true},
		{"auto with durability", executor.LockPipeliningAuto, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg config.Config
			cfg.Executor.Persistence.Redis.LockPipelining = tc.pipelining
			cfg.Redis.Durability.WaitReplicas = tc.replicas
			if got := directLocks(cfg); got != tc.want {
				t.Errorf("directLocks = %v, want %v", got, tc.want)
			}
		})
	}
}
