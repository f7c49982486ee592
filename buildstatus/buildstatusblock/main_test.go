package buildstatusblock_test

import (
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestMain points the example at a private redis-server (see redistest.MainWithStandalone).
func TestMain(m *testing.M) {
	redistest.MainWithStandalone(m, func(addr string) { redisAddr = addr })
}
