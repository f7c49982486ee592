package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/queue"
)

// jobFlags are the values of the flags of the job subcommands (enqueue, inspect, cancel, list,
// pause, resume); each defines only the flags it reads.
type jobFlags struct {
	json bool
	// enqueue
	payload, id, processAt          string
	delay, timeout, uniqueFor, keep time.Duration
	maxRetries                      int
	retryDelays                     []time.Duration
	// list
	state, cursor string
	limit         int
}

// jobCommands returns the subcommands of `redstate queue` that work on jobs with a record and
// on pausing a queue. Each takes the queue as its first argument and prints, with --json, the
// document the HTTP API answers for the same operation.
func jobCommands() []*cobra.Command {
	enqueue := jobSubcommand("enqueue QUEUE", "Enqueue a job with a payload and options (POST /v1/queues/{queue}/jobs)", cobra.ExactArgs(1), queueEnqueue, func(cmd *cobra.Command, f *jobFlags) {
		fl := cmd.Flags()
		fl.StringVar(&f.payload, "payload", "", "the job's input: JSON, @FILE or @- (standard input) (required)")
		fl.StringVar(&f.id, "id", "", "idempotency key: while its record exists, the same id is this one job (default: a random id)")
		fl.DurationVar(&f.delay, "delay", 0, "run the job after this long (e.g. 5s, 1h30m)")
		fl.StringVar(&f.processAt, "process-at", "", "run the job at this RFC 3339 time (not with --delay)")
		fl.IntVar(&f.maxRetries, "max-retries", 0, "retries after a failure (default: the queue's)")
		fl.DurationSliceVar(&f.retryDelays, "retry-delays", nil, "waits before each retry, comma-separated; the last repeats (default: the queue's)")
		fl.DurationVar(&f.timeout, "timeout", 0, "deadline of one attempt (0: none)")
		fl.DurationVar(&f.uniqueFor, "unique-for", 0, "refuse another job with the same id or payload for this long")
		fl.DurationVar(&f.keep, "retention", 0, "keep the finished job's record and result this long (default 24h)")
	})
	list := jobSubcommand("list QUEUE", "List jobs in one state, oldest transition first (GET /v1/queues/{queue}/jobs)", cobra.ExactArgs(1), queueListJobs, func(cmd *cobra.Command, f *jobFlags) {
		fl := cmd.Flags()
		fl.StringVar(&f.state, "state", "", "the state: "+joinStates()+" (required)")
		fl.StringVar(&f.cursor, "cursor", "", "the next cursor printed by the previous page")
		fl.IntVar(&f.limit, "limit", 100, "jobs per page (at most 1000)")
	})
	return []*cobra.Command{
		enqueue,
		jobSubcommand("inspect QUEUE ID", "Print one job: state, attempts with their errors and times, result (GET /v1/queues/{queue}/jobs/{id})", cobra.ExactArgs(2), queueInspectJob, nil),
		jobSubcommand("cancel QUEUE ID", "Cancel a scheduled, pending or retrying job, or ask a running one to stop (DELETE /v1/queues/{queue}/jobs/{id})", cobra.ExactArgs(2), queueCancelJob, nil),
		list,
		jobSubcommand("requeue-job QUEUE ID", "Move a dead job back to pending by its id (POST /v1/queues/{queue}/jobs/{id}/requeue)", cobra.ExactArgs(2), queueRequeueJob, nil),
		jobSubcommand("pause QUEUE", "Pause a queue: its workers on every instance take no jobs; enqueue still works", cobra.ExactArgs(1), queuePause, nil),
		jobSubcommand("resume QUEUE", "Resume a paused queue", cobra.ExactArgs(1), queueResume, nil),
	}
}

// jobSubcommand returns a job subcommand that runs run on a session for its first argument
// (the queue), with --json, the Redis and namespace flags, and the flags define adds.
func jobSubcommand(use, short string, args cobra.PositionalArgs, run func(*cobra.Command, *queueSession, *jobFlags, []string) error, define func(*cobra.Command, *jobFlags)) *cobra.Command {
	f := &jobFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRedisApp(cmd, func(a *app) error {
				s, err := openQueueSession(a, args[0])
				if err != nil {
					return err
				}
				return run(cmd, s, f, args[1:])
			})
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON document (for scripts), as the HTTP API answers, instead of text")
	if define != nil {
		define(cmd, f)
	}
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// joinStates lists the job states for help texts and errors.
func joinStates() string {
	s := make([]string, len(queue.JobStates))
	for i, st := range queue.JobStates {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// readPayload returns --payload: inline JSON, @FILE or @- (stdin). Errors name the flag.
func readPayload(cmd *cobra.Command, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, errors.New("--payload is required: the job's input as JSON, @FILE or @-")
	}
	raw := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			raw, err = io.ReadAll(cmd.InOrStdin())
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, fmt.Errorf("--payload %s: %w", v, err)
		}
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("--payload must be JSON (or @FILE holding JSON); got %.60q", raw)
	}
	return json.RawMessage(raw), nil
}

// jobOptions builds the options of queue enqueue from its flags.
func jobOptions(cmd *cobra.Command, f *jobFlags) (queue.JobOptions, error) {
	o := queue.JobOptions{ID: f.id, Delay: f.delay, RetryDelays: f.retryDelays, Timeout: f.timeout, UniqueFor: f.uniqueFor, Retention: f.keep}
	if cmd.Flags().Changed("max-retries") {
		o.MaxRetries = &f.maxRetries
	}
	if f.processAt != "" {
		if f.delay != 0 {
			return o, errors.New("give --delay or --process-at, not both")
		}
		t, err := time.Parse(time.RFC3339Nano, f.processAt)
		if err != nil {
			return o, fmt.Errorf("--process-at must be an RFC 3339 time such as 2025-01-15T10:30:00Z, got %q", f.processAt)
		}
		o.ProcessAt = t
	}
	return o, o.Validate()
}

func queueEnqueue(cmd *cobra.Command, s *queueSession, f *jobFlags, _ []string) error {
	payload, err := readPayload(cmd, f.payload)
	if err != nil {
		return err
	}
	opts, err := jobOptions(cmd, f)
	if err != nil {
		return err
	}
	p, err := queue.NewProducer(s.broker, s.admin.Queue())
	if err != nil {
		return err
	}
	job, created, err := p.EnqueueJob(cmd.Context(), payload, opts)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), job.Shown())
	}
	verb := "enqueued job"
	if !created {
		verb = "job already exists, nothing enqueued:"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s on %s (%s)\n", verb, job.ID, job.Queue, job.State)
	return err
}

func queueInspectJob(cmd *cobra.Command, s *queueSession, f *jobFlags, args []string) error {
	job, err := s.admin.Job(cmd.Context(), args[0])
	if err != nil {
		return err
	}
	return printJob(cmd, f, job)
}

func queueCancelJob(cmd *cobra.Command, s *queueSession, f *jobFlags, args []string) error {
	job, err := s.admin.CancelJob(cmd.Context(), args[0])
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), job.Shown())
	}
	msg := "cancelled job %s on %s\n"
	if job.State == queue.StateActive {
		msg = "job %s on %s is running: asked its worker to stop it\n"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), msg, job.ID, job.Queue)
	return err
}

func queueRequeueJob(cmd *cobra.Command, s *queueSession, f *jobFlags, args []string) error {
	job, err := s.admin.RequeueJob(cmd.Context(), args[0])
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), job.Shown())
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "requeued dead job %s on %s (%s)\n", job.ID, job.Queue, job.State)
	return err
}

// printJob prints one job: --json as the HTTP API answers it, else its fields and a table of
// its attempts.
func printJob(cmd *cobra.Command, f *jobFlags, job queue.Job) error {
	out := cmd.OutOrStdout()
	if f.json {
		return writeJSON(out, job.Shown())
	}
	t := newTable(out, "FIELD", "VALUE")
	t.row("queue", job.Queue)
	t.row("id", job.ID)
	t.row("state", job.State)
	if job.CancelRequested {
		t.row("cancel", "requested")
	}
	t.row("enqueued", stamp(job.EnqueuedAt))
	t.row("process at", stamp(job.ProcessAt))
	t.row("finished", stamp(job.FinishedAt))
	t.row("retries", job.Message.RetryCount)
	t.row("payload", string(job.Message.Payload))
	if len(job.Result) > 0 {
		t.row("result", string(job.Result))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(job.Attempts) == 0 {
		_, err := fmt.Fprintln(out, "no attempts yet")
		return err
	}
	at := newTable(out, "ATTEMPT", "START", "END", "CONSUMER", "ERROR")
	for i, a := range job.Attempts {
		at.row(i+1, stamp(a.Start), stamp(a.End), a.Consumer, a.Error)
	}
	return at.flush()
}

// stamp prints a time in UTC to the millisecond, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func queueListJobs(cmd *cobra.Command, s *queueSession, f *jobFlags, _ []string) error {
	state := queue.JobState(f.state)
	if !state.Valid() {
		return fmt.Errorf("--state is required: one of %s; got %q", joinStates(), f.state)
	}
	jobs, next, err := s.admin.Jobs(cmd.Context(), state, f.cursor, f.limit)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeJSON(out, queue.NewJobPage(s.admin.Queue(), state, jobs, next))
	}
	t := newTable(out, "ID", "STATE", "ENQUEUED", "PROCESS AT", "ATTEMPTS", "LAST ERROR")
	for _, j := range jobs {
		last := ""
		if n := len(j.Attempts); n > 0 {
			last = j.Attempts[n-1].Error
		}
		t.row(j.ID, j.State, stamp(j.EnqueuedAt), stamp(j.ProcessAt), len(j.Attempts), last)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if next != "" {
		_, err = fmt.Fprintf(out, "more: --cursor %s\n", next)
	}
	return err
}

func queuePause(cmd *cobra.Command, s *queueSession, f *jobFlags, _ []string) error {
	if err := s.admin.Pause(cmd.Context()); err != nil {
		return err
	}
	return printPauseState(cmd, f, s.admin.Queue(), true)
}

func queueResume(cmd *cobra.Command, s *queueSession, f *jobFlags, _ []string) error {
	if err := s.admin.Resume(cmd.Context()); err != nil {
		return err
	}
	return printPauseState(cmd, f, s.admin.Queue(), false)
}

// printPauseState prints whether a queue is paused, as the HTTP API answers with --json.
func printPauseState(cmd *cobra.Command, f *jobFlags, name string, paused bool) error {
	if f.json {
		return writeJSON(cmd.OutOrStdout(), queue.PauseState{Queue: name, Paused: paused})
	}
	word := "resumed"
	if paused {
		word = "paused (enqueue still works; `redstate queue resume` ends it)"
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, word)
	return err
}
