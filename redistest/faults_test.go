package redistest

import (
	"testing"
	"time"
)

func TestSentinelHA_PauseResume(t *testing.T) {
	t.Parallel()
	h := StartSentinelHA(t)
	r := h.Nodes[1]
	r.Pause(t)
	if _, err := command(r.Addr, 200*time.Millisecond, "PING"); err == nil {
		t.Fatal("a paused server answered PING")
	}
	r.Resume(t)
	if _, err := command(r.Addr, probeTimeout, "PING"); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}
