package rediserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestIsTimeout(t *testing.T) {
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                 {nil, false},
		"i/o timeout":         {ioTimeout, true},
		"wrapped i/o timeout": {Map(ioTimeout, "listing builds"), true},
		"context deadline":    {fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		"pool timeout":        {Map(redis.ErrPoolTimeout, "reading builds"), true},
		"refused":             {&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		"canceled":            {context.Canceled, false},
		"closed":              {redis.ErrClosed, false},
	} {
		if got := IsTimeout(tc.err); got != tc.want {
			t.Errorf("%s: IsTimeout(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}
