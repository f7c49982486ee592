package resend_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// counterScript increments KEYS[1] by ARGV[1] and returns its new value with ARGV[2] echoed,
// once per marker.
var counterScript = resend.Once(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if ARGV[2] == 'nil' then return nil end
return {n, ARGV[2], {ok = 'OK'}}
`)

// TestOnce_SecondRunReturnsTheFirstReply: a second run of a call (the same marker) changes
// nothing and returns the first run's reply, whatever its type; another call runs.
func TestOnce_SecondRunReturnsTheFirstReply(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		m := resend.NewMarker("once:", "counter", time.Minute)
		first, err := counterScript.Run(ctx, c, m.Keys("counter"), m.Args(5, "bin\x00ary\xff")...).Result()
		if err != nil {
			t.Fatal(err)
		}
		again, err := counterScript.Run(ctx, c, m.Keys("counter"), m.Args(5, "bin\x00ary\xff")...).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("second run answered %#v, first %#v", again, first)
		}
		if n, _ := c.Get(ctx, "counter").Int(); n != 5 {
			t.Fatalf("counter %d after two runs of one call, want 5", n)
		}
		other := resend.NewMarker("once:", "counter", time.Minute)
		if err := counterScript.Run(ctx, c, other.Keys("counter"), other.Args(1, "nil")...).Err(); err != redis.Nil {
			t.Fatalf("nil reply: %v", err)
		}
		if err := counterScript.Run(ctx, c, other.Keys("counter"), other.Args(1, "nil")...).Err(); err != redis.Nil {
			t.Fatalf("stored nil reply: %v", err)
		}
		if n, _ := c.Get(ctx, "counter").Int(); n != 6 {
			t.Fatalf("counter %d after a second call, want 6", n)
		}
		if ttl := c.PTTL(ctx, m.Key).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("marker TTL %s, want (0, 1m]", ttl)
		}
	})
}

// TestOnce_StalledServerRunsTheCallOnce: the re-send go-redis makes after a read timeout (the
// server stalled) finds the first copy's marker.
func TestOnce_StalledServerRunsTheCallOnce(t *testing.T) {
	srv := redistest.StartStandalone(t)
	c := srv.ResendClient(t)
	ctx := context.Background()
	m := resend.NewMarker("once:", "counter", resend.Window(c))
	_ = counterScript.Load(ctx, c)
	var err error
	runs := srv.RunStalled(t, redistest.Named("evalsha"), func() { err = counterScript.Run(ctx, c, m.Keys("counter"), m.Args(1, "x")...).Err() }, "evalsha")
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("the server ran the script %d times, want 2 (a re-send)", runs)
	}
	if n, _ := c.Get(ctx, "counter").Int(); n != 1 {
		t.Fatalf("counter %d, want 1", n)
	}
}

// TestMarkerKey_SameSlot: a marker key is in its key's slot, whatever the key's braces.
func TestMarkerKey_SameSlot(t *testing.T) {
	for _, key := range []string{"plain", "ns:control:runner-1", "{q}:processing:c1", "pre-{tag}-post", "a{}b", "a{b"} {
		m := resend.MarkerKey("ns:once:", key, resend.Token())
		if keyspace.Slot(m) != keyspace.Slot(key) {
			t.Errorf("MarkerKey(%q) = %q: slot %d, want %d", key, m, keyspace.Slot(m), keyspace.Slot(key))
		}
	}
}

// TestWindow: twice the longest time one command can take, at least MinWindow.
func TestWindow(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, PoolTimeout: 10 * time.Second, MaxRetries: 2, MaxRetryBackoff: time.Second})
	defer c.Close()
	if got, want := resend.Window(c), 2*3*41*time.Second; got != want {
		t.Errorf("Window = %s, want %s", got, want)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, PoolTimeout: 10 * time.Second, MaxRetries: 1, MaxRedirects: 3, MaxRetryBackoff: time.Second})
	defer cc.Close()
	if got, want := resend.Window(cc), 2*2*4*41*time.Second; got != want {
		t.Errorf("cluster Window = %s, want %s", got, want)
	}
	short := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: time.Millisecond, ReadTimeout: time.Millisecond,
		WriteTimeout: time.Millisecond, PoolTimeout: time.Millisecond, MaxRetries: -1, MaxRetryBackoff: time.Millisecond})
	defer short.Close()
	if got := resend.Window(short); got != resend.MinWindow {
		t.Errorf("short Window = %s, want MinWindow", got)
	}
}
