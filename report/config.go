package report

import (
	"errors"
	"fmt"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/sqldb"
)

// HandlerReport is the queue handler of the built-in report generator (queue.queues[].handler:
// report), the default of a queue of the configuration. The other handlers are the queue's
// (queue.HandlerWebhook, queue.HandlerExternal); whichever a queue has, its jobs are the
// report flow's (CheckJob, MarkFailed), so the choice of handler is this package's.
const HandlerReport = "report"

// Record stores (QueueConfig.RecordStore).
const (
	// RecordStoreSQL keeps records in the SQL database (package sqlrecords).
	RecordStoreSQL = "sql"
	// RecordStoreRedis keeps records in Redis next to the queue (package redisrecords).
	RecordStoreRedis = "redis"
	// RecordStoreMemory keeps records in this process (package memrecords).
	RecordStoreMemory = "memory"
)

// QueueConfig is the queue section of redstate's configuration (queue.*): the queues, each a
// generic queue.Spec whose handler this package chooses (HandlerReport by default), and the
// report flow's settings that seed 004 keeps next to them: where records live and the
// reconciler. Its Redis keys are the seed's names ("report:queue", "report:queue:dead") after
// the global namespace.
type QueueConfig struct {
	// RecordStore is where job records (the seed's assessment records) live: RecordStoreSQL
	// (the default: the SQL database, as the seed keeps them in SQL), RecordStoreRedis (next to
	// the queue; needs Redis) or RecordStoreMemory (this process only).
	RecordStore string `koanf:"record-store"`
	// RecordRetention is how long a job record is kept after its last write; 0 (the default)
	// means the store's default: DefaultRecordRetention in Redis and memory, forever in SQL.
	RecordRetention time.Duration `koanf:"record-retention"`
	// Queues are the queues serve consumes, each with its own worker (default: one queue,
	// DefaultQueueSpec). Handler is HandlerReport (the built-in report generator, the default
	// of an empty one), queue.HandlerWebhook (POST each job to Webhook.URL) or
	// queue.HandlerExternal (no worker here: a consumer outside redstate, such as the seed's
	// legacy service, takes the jobs). From the environment: REDSTATE_QUEUE_QUEUES as a
	// YAML/JSON flow list, e.g. '[{name: report:queue, concurrency: 4}]'.
	Queues []queue.Spec `koanf:"queues"`
	// Reconciler re-enqueues records stranded in status 3.
	Reconciler ReconcilerSettings `koanf:"reconciler"`
}

// ReconcilerSettings configures the reconciler of stranded records (queue.reconciler.*);
// ReconcilerConfig is the reconciler's own view of them.
type ReconcilerSettings struct {
	// Enabled turns the reconciler on (default true).
	Enabled bool `koanf:"enabled"`
	// Age is how long a record stays in status 3 before it is checked (default
	// DefaultReconcileAge).
	Age time.Duration `koanf:"age"`
	// Interval is how often it runs (default DefaultReconcileInterval).
	Interval time.Duration `koanf:"interval"`
}

// Config is the report section of redstate's configuration (report.*).
type Config struct {
	// Queue is the queue of the report flow: the /api/assessment routes submit to it and the
	// reconciler watches it, whatever its handler. It must be one of queue.queues. Default:
	// DefaultQueue when configured, else the first queue with handler report; with neither
	// the report flow is off (see QueueIn).
	Queue string `koanf:"queue"`
	// Delay is the built-in generator's artificial work time (default DefaultDelay; the
	// seed's real work takes ~30s; 0 = none).
	Delay time.Duration `koanf:"delay"`
	// SQL maps the SQL record store (queue.record-store: sql) onto a table and columns
	// (default: redstate's own assessment_records).
	SQL RecordsSQLConfig `koanf:"sql"`
}

// RecordsSQLConfig maps the report flow's records onto an SQL table (report.sql.*), so that a
// team's existing records table (seed 004's assessment_records) is used in place.
type RecordsSQLConfig struct {
	// OwnsTable says whether redstate owns the records table (default true): it creates it
	// when missing. False: the table is the team's; redstate checks at start that it has the
	// mapped columns and never issues DDL on it. Either way redstate writes the mapped columns
	// of the records it is asked about: moving a record's status is the report flow's job.
	OwnsTable bool `koanf:"owns-table"`
	// TimeZone is the zone of a date-time column without one (default UTC); an integer
	// column is Unix microseconds.
	TimeZone string `koanf:"time-zone"`
	// Records names the table and its columns.
	Records RecordsTable `koanf:"records"`
}

// RecordsTable names the records table and its columns (report.sql.records.*). Answers,
// Result and Error are optional: empty means the table has no such column (the value is not
// stored and reads as empty).
type RecordsTable struct {
	// Table is the table (default assessment_records).
	Table string `koanf:"table"`
	// ID is the record id column, an integer key (default id).
	ID string `koanf:"id"`
	// Status is the status column, 1..5 (default status).
	Status string `koanf:"status"`
	// Answers is the submitted answers column, JSON text (default answers).
	Answers string `koanf:"answers"`
	// Result is the report column, JSON text (default result).
	Result string `koanf:"result"`
	// Error is the failure reason column (default error).
	Error string `koanf:"error"`
	// Updated is the last write's time column (default updated_at).
	Updated string `koanf:"updated"`
}

// DefaultRecordsSQLConfig returns redstate's own records table, owned.
func DefaultRecordsSQLConfig() RecordsSQLConfig {
	return RecordsSQLConfig{OwnsTable: true, TimeZone: "UTC", Records: RecordsTable{Table: "assessment_records", ID: "id",
		Status: "status", Answers: "answers", Result: "result", Error: "error", Updated: "updated_at"}}
}

// IsDefault reports whether c is DefaultRecordsSQLConfig.
func (c RecordsSQLConfig) IsDefault() bool { return c == DefaultRecordsSQLConfig() }

// Location returns TimeZone's location (UTC when empty).
func (c RecordsSQLConfig) Location() (*time.Location, error) {
	if c.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.TimeZone)
}

// Columns returns the table's columns by key (report.sql.records.<key>), optional ones empty
// when not mapped, in a fixed order.
func (c RecordsSQLConfig) Columns() [][2]string {
	r := c.Records
	return [][2]string{{"id", r.ID}, {"status", r.Status}, {"answers", r.Answers}, {"result", r.Result}, {"error", r.Error}, {"updated", r.Updated}}
}

// Validate reports every problem of report.sql at once, each naming its key.
func (c RecordsSQLConfig) Validate() error {
	var errs []error
	check := func(key, v string, optional bool) {
		if (v != "" || !optional) && !sqldb.ValidIdent(v) {
			errs = append(errs, fmt.Errorf("%s: must be a table or column name matching ^[A-Za-z_][A-Za-z0-9_]{0,63}$, got %q", key, v))
		}
	}
	check("report.sql.records.table", c.Records.Table, false)
	for _, kv := range c.Columns() {
		check("report.sql.records."+kv[0], kv[1], kv[0] == "answers" || kv[0] == "result" || kv[0] == "error")
	}
	if _, err := c.Location(); err != nil {
		errs = append(errs, fmt.Errorf("report.sql.time-zone: %v", err))
	}
	return errors.Join(errs...)
}

// DefaultQueueSpec returns the seed's queue: DefaultQueue with the queue's defaults
// (queue.DefaultSpec) and the built-in report generator.
func DefaultQueueSpec() queue.Spec {
	s := queue.DefaultSpec(DefaultQueue)
	s.Handler = HandlerReport
	return s
}

// DefaultQueueConfig returns the queue section's defaults: records in SQL, kept for the
// store's default, the seed's queue (DefaultQueueSpec), the reconciler on.
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{
		RecordStore: RecordStoreSQL,
		Queues:      []queue.Spec{DefaultQueueSpec()},
		Reconciler:  ReconcilerSettings{Enabled: true, Age: DefaultReconcileAge, Interval: DefaultReconcileInterval},
	}
}

// DefaultConfig returns the report section's defaults.
func DefaultConfig() Config {
	return Config{Delay: DefaultDelay, SQL: DefaultRecordsSQLConfig()}
}

// EffectiveQueues returns the queues with every default spelled out (queue.Spec.Effective),
// an empty handler as HandlerReport.
func (c QueueConfig) EffectiveQueues() []queue.Spec {
	if c.Queues == nil {
		return nil
	}
	out := make([]queue.Spec, len(c.Queues))
	for i, s := range c.Queues {
		out[i] = effectiveQueue(s)
	}
	return out
}

func effectiveQueue(s queue.Spec) queue.Spec {
	s = s.Effective()
	if s.Handler == "" {
		s.Handler = HandlerReport
	}
	return s
}

// Validate reports every problem of the section at once, each naming its key. Whether queue
// names overlap each other's or another block's keys is checked by the configuration, which
// knows every block.
func (c QueueConfig) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.RecordRetention < 0 {
		add("queue.record-retention", "must not be negative, got %s (0 means the store's default)", c.RecordRetention)
	}
	switch c.RecordStore {
	case RecordStoreSQL, RecordStoreRedis, RecordStoreMemory:
	default:
		add("queue.record-store", "must be sql, redis or memory, got %q", c.RecordStore)
	}
	names := map[string]int{}
	for i, s := range c.Queues {
		if s.Handler == "" {
			s.Handler = HandlerReport
		}
		if queue.ValidateQueueName(s.Name) == nil {
			if j, dup := names[s.Name]; dup {
				add(fmt.Sprintf("queue.queues[%d].name", i), "%q is also the name of queue.queues[%d]; names must be unique", s.Name, j)
			} else {
				names[s.Name] = i
			}
		}
		errs = append(errs, s.ValidateAt(fmt.Sprintf("queue.queues[%d].", i), HandlerReport))
	}
	if c.Reconciler.Age <= 0 {
		add("queue.reconciler.age", "must be positive, got %s", c.Reconciler.Age)
	}
	if c.Reconciler.Interval <= 0 {
		add("queue.reconciler.interval", "must be positive, got %s", c.Reconciler.Interval)
	}
	return errors.Join(errs...)
}

// Validate reports every problem of the section at once, each naming its key. That Queue is
// one of queue.queues is checked by the configuration (QueueIn).
func (c Config) Validate() error {
	var errs []error
	if c.Delay < 0 {
		errs = append(errs, fmt.Errorf("report.delay: must not be negative, got %s (0 means no artificial delay)", c.Delay))
	}
	return errors.Join(append(errs, c.SQL.Validate())...)
}

// QueueIn returns the queue of the report flow among the queues of q (see Config.Queue) and
// whether the flow is on: Queue when set (on when q has it), else DefaultQueue when q has it,
// else q's first queue with handler report.
func (c Config) QueueIn(q QueueConfig) (string, bool) {
	has := func(name string) bool {
		for _, s := range q.Queues {
			if s.Name == name {
				return true
			}
		}
		return false
	}
	if c.Queue != "" {
		return c.Queue, has(c.Queue)
	}
	if has(DefaultQueue) {
		return DefaultQueue, true
	}
	for _, s := range q.Queues {
		if effectiveQueue(s).Handler == HandlerReport {
			return s.Name, true
		}
	}
	return "", false
}
