package lease

import (
	"context"
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestClockMicros: the acquire script's clock is TIME's seconds and microseconds as one
// decimal number of microseconds, whatever the number of digits of the microseconds.
func TestClockMicros(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	for _, c := range []struct{ sec, usec, want string }{
		{"1764377000", "0", "1764377000000000"},
		{"1764377000", "7", "1764377000000007"},
		{"1764377000", "42", "1764377000000042"},
		{"1764377000", "12345", "1764377000012345"},
		{"1764377000", "100000", "1764377000100000"},
		{"1764377000", "999999", "1764377000999999"},
	} {
		got, err := client.Eval(context.Background(), clockMicrosLua+"return clock_micros({ARGV[1], ARGV[2]})", nil, c.sec, c.usec).Text()
		if err != nil || got != c.want {
			t.Errorf("clock_micros(%s, %s) = %q, %v; want %s", c.sec, c.usec, got, err, c.want)
		}
	}
}
