package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
)

// MaxPeriodicNameLen is the longest entry name whose tick job ids ("cron:<name>:<unix seconds>",
// up to 12 digits) stay within MaxJobIDLen.
const MaxPeriodicNameLen = MaxJobIDLen - len("cron:") - len(":") - 12

// PeriodicSpec is one periodic job of the configuration (queue.periodic[]): a job carrying
// Payload enqueued on Queue at every tick of Cron, once per tick across all instances (package
// queue/periodic runs them).
type PeriodicSpec struct {
	// Name identifies the entry: 1..MaxPeriodicNameLen characters from [A-Za-z0-9:_.-],
	// unique. It is part of every tick's job id ("cron:<name>:<tick>") and of the scheduler's
	// state.
	Name string `koanf:"name"`
	// Cron is the schedule (ParseCron): five fields (minute hour day-of-month month
	// day-of-week), six with a leading seconds field, or a descriptor (@hourly, @every 5m).
	Cron string `koanf:"cron"`
	// Queue is the queue the jobs go to: one of queue.queues.
	Queue string `koanf:"queue"`
	// Payload is the job's payload, any JSON value (a YAML mapping in a file); none by default.
	Payload any `koanf:"payload"`
	// Timezone is the IANA time zone the schedule's fields are read in ("Europe/Paris");
	// empty means UTC. A Cron starting with CRON_TZ= names its own zone instead.
	Timezone string `koanf:"timezone"`
}

// cronParser reads standard five-field expressions, an optional leading seconds field and the
// descriptors (@yearly, @monthly, @weekly, @daily, @hourly, @every <duration>).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron expression read in the zone timezone ("" or "UTC": UTC; an IANA
// name otherwise). expr may name its own zone with a leading "CRON_TZ=<zone> " (or "TZ="),
// but not together with timezone. Errors are plain and name the problem; the configuration
// reports them under the entry's key.
func ParseCron(expr, timezone string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, errors.New("the cron expression is empty")
	}
	ownZone := strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
	switch {
	case ownZone && timezone != "":
		return nil, fmt.Errorf("%q names its own time zone; leave timezone (%q) empty", expr, timezone)
	case !ownZone:
		if timezone == "" {
			timezone = "UTC"
		}
		expr = "CRON_TZ=" + timezone + " " + expr
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	if d, ok := s.(cron.ConstantDelaySchedule); ok && d.Delay <= 0 {
		return nil, fmt.Errorf("%q: @every needs at least one second", expr)
	}
	return s, nil
}

// validatePeriodic reports the problems of the periodic entries: names valid and unique, each
// cron expression parses, each queue is one of queues, each payload is JSON.
func validatePeriodic(entries []PeriodicSpec, queues []Spec) []error {
	var errs []error
	add := func(i int, field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("queue.periodic[%d].%s: %s", i, field, fmt.Sprintf(format, args...)))
	}
	names := map[string]int{}
	for i, p := range entries {
		if err := ValidateQueueName(p.Name); err != nil {
			add(i, "name", "entry names follow the queue-name rule: %v", err)
		} else if len(p.Name) > MaxPeriodicNameLen {
			add(i, "name", "%d characters; at most %d, so that every tick's job id (\"cron:<name>:<tick>\") fits in %d", len(p.Name), MaxPeriodicNameLen, MaxJobIDLen)
		} else if j, dup := names[p.Name]; dup {
			add(i, "name", "%q is also the name of queue.periodic[%d]; names must be unique", p.Name, j)
		} else {
			names[p.Name] = i
		}
		if _, err := ParseCron(p.Cron, p.Timezone); err != nil {
			add(i, "cron", "%v", err)
		}
		if !slices.ContainsFunc(queues, func(s Spec) bool { return s.Name == p.Queue }) {
			add(i, "queue", "%q is not one of queue.queues", p.Queue)
		}
		if _, err := json.Marshal(p.Payload); err != nil {
			add(i, "payload", "not expressible as JSON: %v", err)
		}
	}
	return errs
}

// PayloadJSON returns Payload as JSON (nil when there is none). Errors: a payload that is not
// expressible as JSON (Validate reports it first).
func (p PeriodicSpec) PayloadJSON() (json.RawMessage, error) {
	if p.Payload == nil {
		return nil, nil
	}
	return json.Marshal(p.Payload)
}
