package periodic

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Entry is one periodic job: a job carrying Payload enqueued on Queue at every tick of
// Schedule.
type Entry struct {
	// Name identifies the entry (queue.ValidateQueueName's rule), unique among the entries.
	Name string
	// Schedule gives the ticks (queue.ParseCron).
	Schedule cron.Schedule
	// Queue is the queue the jobs go to.
	Queue string
	// Payload is every tick's job payload (JSON); may be nil.
	Payload json.RawMessage
}

// EntriesFrom builds the entries of the configuration's queue.periodic (already validated by
// queue.Config.Validate). Errors: EINVALID naming the entry.
func EntriesFrom(specs []queue.PeriodicSpec) ([]Entry, error) {
	out := make([]Entry, 0, len(specs))
	for i, p := range specs {
		sched, err := queue.ParseCron(p.Cron, p.Timezone)
		if err != nil {
			return nil, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("queue.periodic[%d].cron", i))
		}
		payload, err := p.PayloadJSON()
		if err != nil {
			return nil, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("queue.periodic[%d].payload", i))
		}
		out = append(out, Entry{Name: p.Name, Schedule: sched, Queue: p.Queue, Payload: payload})
	}
	return out, nil
}

// TickID is the job id of entry name's tick at: "cron:<name>:<at unix seconds>". Every
// instance derives the same id for the same tick.
func TickID(name string, at time.Time) string {
	return "cron:" + name + ":" + strconv.FormatInt(at.Unix(), 10)
}

// nextTick returns the first tick of s strictly after t (zero when there is none). @every
// schedules tick at the multiples of their delay since the Unix epoch, so every instance
// agrees on them whenever it starts.
func nextTick(s cron.Schedule, t time.Time) time.Time {
	if d, ok := s.(cron.ConstantDelaySchedule); ok {
		step := int64(d.Delay / time.Second)
		return time.Unix((floorDiv(t.Unix(), step)+1)*step, 0)
	}
	return s.Next(t)
}

// lastTick returns the latest tick of s at or before now (zero when there is none within the
// robfig parser's five-year search). Spec schedules only go forward, so it looks back a
// minute, then twice as far each time, until a window holds a tick, and walks to its end.
func lastTick(s cron.Schedule, now time.Time) time.Time {
	now = now.Truncate(time.Second)
	if d, ok := s.(cron.ConstantDelaySchedule); ok {
		step := int64(d.Delay / time.Second)
		return time.Unix(floorDiv(now.Unix(), step)*step, 0)
	}
	for back := time.Minute; back <= maxLookBack; back *= 2 {
		t := s.Next(now.Add(-back))
		if t.IsZero() || t.After(now) {
			continue
		}
		for {
			n := s.Next(t)
			if n.IsZero() || n.After(now) {
				return t
			}
			t = n
		}
	}
	return time.Time{}
}

// maxLookBack bounds lastTick's search: robfig's Next searches five years ahead.
const maxLookBack = 6 * 366 * 24 * time.Hour

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
