package report

import (
	"errors"
	"fmt"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/sqldb"
)

// HandlerReport is the queue handler of the built-in report generator (queue.queues[].handler:
// report), the default of a queue of the configuration, and valid on the report queue only
// (ValidateQueueHandlers). The other handlers are the queue's (queue.HandlerWebhook,
// queue.HandlerExternal); whichever the report queue has, its jobs are the report flow's
// (CheckJob, MarkFailed), and every other queue's are plain jobs.
const HandlerReport = "report"

// Record stores (queue.Config.RecordStore).
const (
	// RecordStoreSQL keeps records in the SQL database (package sqlrecords).
	RecordStoreSQL = "sql"
	// RecordStoreRedis keeps records in Redis next to the queue (package redisrecords).
	RecordStoreRedis = "redis"
	// RecordStoreMemory keeps records in this process (package memrecords).
	RecordStoreMemory = "memory"
)

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
// team's existing records table (the legacy application's assessment_records) is used in place.
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
func DefaultQueueConfig() queue.Config {
	return queue.Config{
		RecordStore: RecordStoreSQL,
		Queues:      []queue.Spec{DefaultQueueSpec()},
		Reconciler:  queue.ReconcilerConfig{Enabled: true, Age: DefaultReconcileAge, Interval: DefaultReconcileInterval},
	}
}

// DefaultConfig returns the report section's defaults.
func DefaultConfig() Config {
	return Config{Delay: DefaultDelay, SQL: DefaultRecordsSQLConfig()}
}

// ValidateQueueConfig reports every problem of the queue section q at once, each naming its
// key (queue.Config.Validate), with this package's handler (HandlerReport, the default) and
// record stores.
func ValidateQueueConfig(q queue.Config) error {
	return q.Validate(HandlerReport, RecordStoreSQL, RecordStoreRedis, RecordStoreMemory)
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

// ValidateQueueHandlers reports every queue of q other than the report flow's queue (QueueIn)
// whose handler is HandlerReport, by name or as the default of an empty one, each naming its
// key: the generator, the report checks and the dead-letter hook are the report queue's only
// (a second report queue would run report jobs nothing submits or reconciles).
func (c Config) ValidateQueueHandlers(q queue.Config) error {
	reportQueue, on := c.QueueIn(q)
	var errs []error
	for i, s := range q.Queues {
		if (s.Handler != "" && s.Handler != HandlerReport) || (on && s.Name == reportQueue) {
			continue
		}
		how := fmt.Sprintf("%q", HandlerReport)
		if s.Handler == "" {
			how = fmt.Sprintf("%q (the default of a queue that names none)", HandlerReport)
		}
		where := "the report queue (report.queue)"
		if on {
			where = fmt.Sprintf("the report queue %q (report.queue)", reportQueue)
		}
		errs = append(errs, fmt.Errorf("queue.queues[%d].handler: %s runs the report generator, which serves only %s; give %q handler %s or %s",
			i, how, where, s.Name, queue.HandlerWebhook, queue.HandlerExternal))
	}
	return errors.Join(errs...)
}

// QueueIn returns the queue of the report flow among the queues of q (see Config.Queue) and
// whether the flow is on: Queue when set (on when q has it), else DefaultQueue when q has it,
// else q's first queue with handler report.
func (c Config) QueueIn(q queue.Config) (string, bool) {
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
		if s.Handler == "" || s.Handler == HandlerReport {
			return s.Name, true
		}
	}
	return "", false
}
