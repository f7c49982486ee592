package lockbench

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/redisconn"
)

// ServerCost is what one side's slices of a mode cost: the Redis server's CPU time
// (redisconn.ServerCPU: reading, parsing, running and answering the calls), the commands it
// ran (INFO commandstats; a command a script calls counts within the script's EVALSHA and on
// its own line) and the bench process's own CPU time (getrusage: the client library, the
// callers and the bench's bookkeeping, the same for both sides).
type ServerCost struct {
	CPU       time.Duration
	Commands  redisconn.CommandStats
	ClientCPU time.Duration
}

// add adds the cost of one slice.
func (c *ServerCost) add(cpu, client time.Duration, cmds redisconn.CommandStats) {
	c.CPU += cpu
	c.ClientCPU += client
	if c.Commands == nil {
		c.Commands = redisconn.CommandStats{}
	}
	for name, s := range cmds {
		o := c.Commands[name]
		c.Commands[name] = redisconn.CommandStat{Calls: o.Calls + s.Calls, Usec: o.Usec + s.Usec}
	}
}

// CPUPer returns the server CPU microseconds per attempt (0 without attempts).
func (c ServerCost) CPUPer(attempts int64) float64 {
	if attempts == 0 {
		return 0
	}
	return float64(c.CPU.Nanoseconds()) / 1000 / float64(attempts)
}

// ClientCPUPer returns the bench process's CPU microseconds per attempt (0 without attempts).
func (c ServerCost) ClientCPUPer(attempts int64) float64 {
	if attempts == 0 {
		return 0
	}
	return float64(c.ClientCPU.Nanoseconds()) / 1000 / float64(attempts)
}

// CommandsPer returns the server microseconds per attempt of the calls the side sent (both
// sides send only scripts: CommandStats.ClientUsec; 0 without attempts).
func (c ServerCost) CommandsPer(attempts int64) float64 {
	if attempts == 0 {
		return 0
	}
	return float64(c.Commands.ClientUsec()) / float64(attempts)
}

// costedPair runs a and b as bench.RunPair does (the duration cut into an even number of
// slices of at least one second, up to ten, in A B B A order) and reads the server's CPU time
// and commandstats around every slice, so that each side's cost is its own slices' only. The
// two INFO calls of a reading fall between slices, in neither side's figures.
func costedPair(ctx context.Context, t bench.Target, nameA, nameB string, cfg bench.Config, a, b bench.Op) (ra, rb *bench.Result, ca, cb ServerCost, err error) {
	n := max(2, min(int(cfg.Duration/time.Second), 10))
	if n%2 == 1 {
		n++
	}
	one := cfg
	one.Duration = cfg.Duration / time.Duration(n)
	ra, rb = &bench.Result{Name: nameA}, &bench.Result{Name: nameB}
	run := func(name string, op bench.Op, into *bench.Result, cost *ServerCost) error {
		cmd0, err := redisconn.ReadCommandStats(ctx, t.Client)
		if err != nil {
			return err
		}
		cpu0, err := redisconn.ServerCPU(ctx, t.Client)
		if err != nil {
			return err
		}
		self0 := processCPU()
		into.Merge(bench.Run(ctx, name, one, op))
		self1 := processCPU()
		cpu1, err := redisconn.ServerCPU(ctx, t.Client)
		if err != nil {
			return err
		}
		cmd1, err := redisconn.ReadCommandStats(ctx, t.Client)
		if err != nil {
			return err
		}
		// The first INFO commandstats and the two INFO cpu of this reading ran in between.
		cost.add(cpu1-cpu0, self1-self0, withoutInfo(cmd1.Sub(cmd0)))
		return nil
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		first, second := func() error { return run(nameA, a, ra, &ca) }, func() error { return run(nameB, b, rb, &cb) }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return ra, rb, ca, cb, fmt.Errorf("reading the server's cost: %w", err)
		}
		if err := second(); err != nil {
			return ra, rb, ca, cb, fmt.Errorf("reading the server's cost: %w", err)
		}
	}
	return ra, rb, ca, cb, nil
}

// withoutInfo drops the INFO calls of the readings themselves.
func withoutInfo(s redisconn.CommandStats) redisconn.CommandStats {
	delete(s, "info")
	return s
}

// processCPU returns the CPU time this process has used (user and system; 0 if getrusage
// fails).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
