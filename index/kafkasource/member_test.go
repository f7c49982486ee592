package kafkasource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/redisindex"
)

// memberEnv carries a memberSpec (JSON) to a process of this test binary started as a member
// of a consumer group: TestMain runs the member instead of the tests.
const memberEnv = "REDSTATE_KAFKASOURCE_TEST_MEMBER"

// memberSpec is what a member process runs: a Source of the seed table's index under Prefix on
// the Redis at RedisAddr, in Group.
type memberSpec struct {
	Brokers                                      []string
	Topics                                       []string
	Group, RedisAddr, Prefix                     string
	SessionTimeout, HeartbeatInterval, Rebalance time.Duration
}

// runMember runs the member of spec until its standard input closes (the test ended) or it is
// killed; it exits the process.
func runMember(spec string) {
	var s memberSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "member spec:", err)
		os.Exit(2)
	}
	client := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: s.Prefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, "member index:", err)
		os.Exit(2)
	}
	src, err := kafkasource.New(ix, kafkasource.Options{Brokers: s.Brokers, Topics: s.Topics, Group: s.Group, Format: index.FormatCanal,
		CommitInterval: 200 * time.Millisecond, ErrorDelay: 100 * time.Millisecond, SessionTimeout: s.SessionTimeout,
		HeartbeatInterval: s.HeartbeatInterval, RebalanceTimeout: s.Rebalance, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "member source:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := src.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "member run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// member is a group member running in a process of its own.
type member struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	mu     sync.Mutex
	output bytes.Buffer
	done   chan struct{}
}

// Write keeps the process's output, shown if the test fails.
func (m *member) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.output.Write(p)
}

// startMember starts a member process of spec (its Redis and prefix those of e), stopped with
// the test.
func (e *env) startMember(spec memberSpec) *member {
	e.t.Helper()
	spec.RedisAddr, spec.Prefix, spec.Brokers = e.redis.Options().Addr, e.prefix, e.brokers
	b, err := json.Marshal(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	m := &member{cmd: exec.Command(os.Args[0]), done: make(chan struct{})}
	m.cmd.Env = append(os.Environ(), memberEnv+"="+string(b))
	m.cmd.Stdout, m.cmd.Stderr = m, m
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	e.t.Cleanup(func() {
		_ = m.stdin.Close()
		select {
		case <-m.done:
		case <-time.After(waitTimeout):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
		if e.t.Failed() {
			m.mu.Lock()
			e.t.Logf("member process output:\n%s", m.output.String())
			m.mu.Unlock()
		}
	})
	return m
}

// kill ends the member with SIGKILL, as kill -9 does: it neither commits nor leaves the group.
func (m *member) kill(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-m.done
}
