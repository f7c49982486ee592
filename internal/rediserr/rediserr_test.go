package rediserr

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// replyErr is an error reply as go-redis reports it (it implements redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestMap(t *testing.T) {
	already := redstate.Errorf(redstate.ECONFLICT, "x")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"redis.Nil", redis.Nil, redstate.ENOTFOUND},
		{"loading", replyErr("LOADING Redis is loading the dataset in memory"), redstate.EUNAVAILABLE},
		{"clusterdown", replyErr("CLUSTERDOWN The cluster is down"), redstate.EUNAVAILABLE},
		{"unblocked", replyErr("UNBLOCKED client unblocked via CLIENT UNBLOCK"), redstate.EUNAVAILABLE},
		{"acl noperm", replyErr("NOPERM User worker has no permissions to run the 'lpush' command"), redstate.EUNAVAILABLE},
		{"noauth", replyErr("NOAUTH Authentication required."), redstate.EUNAVAILABLE},
		{"wrongpass", replyErr("WRONGPASS invalid username-password pair or user is disabled."), redstate.EUNAVAILABLE},
		{"script error", replyErr("ERR user_script:1: bad"), redstate.EINTERNAL},
		{"wrongtype", replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), redstate.EINTERNAL},
		{"transport", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), redstate.EUNAVAILABLE},
		{"context", context.DeadlineExceeded, redstate.EUNAVAILABLE},
		{"already mapped", already, redstate.ECONFLICT},
	}
	for _, c := range cases {
		if got := redstate.ErrorCode(Map(c.err, "op")); got != c.want {
			t.Errorf("%s: code %q, want %q", c.name, got, c.want)
		}
	}
}

func TestReply_NotNowRepliesStayUnavailable(t *testing.T) {
	if got := redstate.ErrorCode(Reply("OOM command not allowed when used memory > 'maxmemory'.", "saving build")); got != redstate.EUNAVAILABLE {
		t.Fatalf("OOM inside a batch script maps to %q, want unavailable (the breaker must see it)", got)
	}
	if got := redstate.ErrorCode(Reply("WRONGTYPE Operation against a key holding the wrong kind of value", "saving build")); got != redstate.EINTERNAL {
		t.Fatalf("WRONGTYPE inside a batch script maps to %q, want internal", got)
	}
}
