package redisconn

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// CommandStat is one command's counters of INFO commandstats: calls and the server's
// microseconds spent in them.
type CommandStat struct {
	Calls int64
	Usec  int64
}

// CommandStats maps a command name (lower case, as INFO prints it: "evalsha", "lpush") to its
// counters.
type CommandStats map[string]CommandStat

// ReadCommandStats returns INFO commandstats summed over every master (one server when the
// client is not a Cluster client). Benchmarks and tests read it before and after a phase (Sub) to tell
// the server's work per operation from the time the phase waited for a core. A command a Lua
// script calls counts on its own line as well as within the script's EVAL/EVALSHA time.
func ReadCommandStats(ctx context.Context, client redis.UniversalClient) (CommandStats, error) {
	out := CommandStats{}
	var mu sync.Mutex
	err := ForEachMaster(ctx, client, func(ctx context.Context, c redis.Cmdable) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		stats, err := parseCommandStats(info)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for name, s := range stats {
			o := out[name]
			out[name] = CommandStat{Calls: o.Calls + s.Calls, Usec: o.Usec + s.Usec}
		}
		return nil
	})
	return out, err
}

// parseCommandStats parses lines "cmdstat_<name>:calls=<n>,usec=<n>,..." of INFO commandstats.
func parseCommandStats(info string) (CommandStats, error) {
	out := CommandStats{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, fmt.Errorf("bench: commandstats line %q", line)
		}
		var s CommandStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			var err error
			switch k {
			case "calls":
				s.Calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.Usec, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("bench: commandstats line %q: %w", line, err)
			}
		}
		out[name] = s
	}
	return out, nil
}

// Sub returns the counters run since before (s minus before), leaving out commands not called
// in between.
func (s CommandStats) Sub(before CommandStats) CommandStats {
	out := CommandStats{}
	for name, a := range s {
		d := CommandStat{Calls: a.Calls - before[name].Calls, Usec: a.Usec - before[name].Usec}
		if d.Calls > 0 {
			out[name] = d
		}
	}
	return out
}

// scriptCommands are the commands that run a script or function: their time includes the
// commands they call.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// ClientUsec returns the server microseconds of the commands clients sent: the time of the
// scripts (which includes the commands they call) when any ran, else of every command. It is
// exact for a phase whose clients send only scripts, or only plain commands; a phase that
// sends both gets its scripts' time only.
func (s CommandStats) ClientUsec() int64 {
	var n int64
	ran := false
	for _, name := range scriptCommands {
		if c, ok := s[name]; ok {
			n += c.Usec
			ran = true
		}
	}
	if ran {
		return n
	}
	for _, c := range s {
		n += c.Usec
	}
	return n
}

// String lists the commands by server time, most first: "evalsha 100000×12.3µs, ...".
func (s CommandStats) String() string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if s[names[i]].Usec != s[names[j]].Usec {
			return s[names[i]].Usec > s[names[j]].Usec
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, name := range names {
		c := s[name]
		parts[i] = fmt.Sprintf("%s %d×%.2fµs", name, c.Calls, float64(c.Usec)/float64(c.Calls))
	}
	return strings.Join(parts, ", ")
}
