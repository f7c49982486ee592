package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// SideCost is what one side's slices of a RunPairCosted cost: the Redis server's CPU time
// (redisconn.ServerCPU: reading, parsing, running and answering the calls), the commands it
// ran (INFO commandstats; a command a script calls counts within the script's EVALSHA and on
// its own line) and the bench process's own CPU time (getrusage: the client library, the
// callers and the bench's bookkeeping, the same for both sides).
type SideCost struct {
	CPU       time.Duration
	Commands  redisconn.CommandStats
	ClientCPU time.Duration
}

// add adds the cost of one slice.
func (c *SideCost) add(cpu, client time.Duration, cmds redisconn.CommandStats) {
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

// CPUPer returns the server CPU microseconds per operation (0 without operations).
func (c SideCost) CPUPer(operations int64) float64 {
	if operations == 0 {
		return 0
	}
	return float64(c.CPU.Nanoseconds()) / 1000 / float64(operations)
}

// ClientCPUPer returns the bench process's CPU microseconds per operation (0 without operations).
func (c SideCost) ClientCPUPer(operations int64) float64 {
	if operations == 0 {
		return 0
	}
	return float64(c.ClientCPU.Nanoseconds()) / 1000 / float64(operations)
}

// CommandsPer returns the server microseconds per operation of the calls the side sent
// (CommandStats.ClientUsec: its scripts' time when it ran scripts, else its commands'; 0
// without operations).
func (c SideCost) CommandsPer(operations int64) float64 {
	if operations == 0 {
		return 0
	}
	return float64(c.Commands.ClientUsec()) / float64(operations)
}

// CommandList lists the commands the server ran by server time, most first, as calls per
// operation × µs per call: "evalsha 2.00×3.02µs, set 2.00×0.54µs, ...".
func (c SideCost) CommandList(ops int64) string {
	names := make([]string, 0, len(c.Commands))
	for name := range c.Commands {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return c.Commands[names[i]].Usec > c.Commands[names[j]].Usec })
	parts := make([]string, len(names))
	for i, name := range names {
		s := c.Commands[name]
		parts[i] = fmt.Sprintf("%s %.2f×%.2fµs", name, float64(s.Calls)/float64(max(ops, 1)), float64(s.Usec)/float64(s.Calls))
	}
	return strings.Join(parts, ", ")
}

// Measure runs phase and adds what it cost to c: the server's CPU time and commandstats read
// on client before and after it, and this process's CPU time. The INFO calls of the readings
// are left out. It fails only when the server cannot be read.
func (c *SideCost) Measure(ctx context.Context, client redis.UniversalClient, phase func()) error {
	cmd0, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		return err
	}
	cpu0, err := redisconn.ServerCPU(ctx, client)
	if err != nil {
		return err
	}
	self0 := processCPU()
	phase()
	self1 := processCPU()
	cpu1, err := redisconn.ServerCPU(ctx, client)
	if err != nil {
		return err
	}
	cmd1, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		return err
	}
	cmds := cmd1.Sub(cmd0)
	delete(cmds, "info")
	c.add(cpu1-cpu0, self1-self0, cmds)
	return nil
}

// RunPairCosted runs a and b as RunPair does (the duration cut into an even number of slices
// of at least one second, up to ten, in A B B A order) and measures every slice (Measure on
// t.Client), so that each side's cost is its own slices' only. It fails only when the server
// cannot be read.
func RunPairCosted(ctx context.Context, t Target, nameA, nameB string, cfg Config, a, b Op) (ra, rb *Result, ca, cb SideCost, err error) {
	n := max(2, min(int(cfg.Duration/time.Second), 10))
	if n%2 == 1 {
		n++
	}
	one := cfg
	one.Duration = cfg.Duration / time.Duration(n)
	ra, rb = &Result{Name: nameA}, &Result{Name: nameB}
	run := func(name string, op Op, into *Result, cost *SideCost) error {
		return cost.Measure(ctx, t.Client, func() { into.Merge(Run(ctx, name, one, op)) })
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

// processCPU returns the CPU time this process has used (user and system; 0 if getrusage
// fails).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
