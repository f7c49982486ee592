package buildstatus

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/outagelog"
)

// Observer receives the duration and outcome of every store operation. *metrics.Metrics
// implements it; this package does not depend on Prometheus.
type Observer interface {
	// ObserveOp records one operation of a block ("buildstatus") on a backend ("redis",
	// "memory", "resilient"); err is the operation's result (nil on success).
	ObserveOp(block, op, backend string, d time.Duration, err error)
}

// Block is the block name under which this package reports metrics.
const Block = "buildstatus"

// Operation names used as the "op" metric label and the "operation" log attribute.
const (
	OpSave           = "save"
	OpGet            = "get"
	OpGetMany        = "get_many"
	OpExists         = "exists"
	OpTTL            = "ttl"
	OpDelete         = "delete"
	OpUpdatePlatform = "update_platform"
	OpList           = "list"
	OpListProject    = "list_project"
	OpWatch          = "watch"
)

// Instrument returns a Store that times every call of s and reports it to obs (which may be nil)
// under backend, and logs: Debug for each save (buildId, size in
// bytes) and get (buildId, found), Error for EUNAVAILABLE and EINTERNAL failures (operation,
// buildId, err). Watch is timed up to the subscription only. log may be nil (slog.Default).
func Instrument(s Store, backend string, obs Observer, log *slog.Logger) Store {
	if log == nil {
		log = slog.Default()
	}
	return &instrumented{s: s, backend: backend, obs: obs, log: log, outage: outagelog.New(log, "build status "+backend+" store")}
}

type instrumented struct {
	s       Store
	backend string
	obs     Observer
	log     *slog.Logger
	outage  *outagelog.Log // summarises EUNAVAILABLE failures
}

var _ Store = (*instrumented)(nil)

// done reports an operation's outcome; buildID may be "" for operations on many builds.
func (i *instrumented) done(ctx context.Context, op, buildID string, start time.Time, err error) {
	if i.obs != nil {
		i.obs.ObserveOp(Block, op, i.backend, time.Since(start), err)
	}
	switch redstate.ErrorCode(err) {
	case redstate.EINTERNAL:
		i.log.ErrorContext(ctx, "build status store operation failed",
			slog.String("operation", op), slog.String("buildId", buildID),
			slog.String("backend", i.backend), slog.Any("err", err))
	case redstate.EUNAVAILABLE:
		// The seed logs every failed operation; during an outage that is one ERROR per
		// request, so the first failure is an ERROR (the seed's line) and the rest of the
		// outage is summarised (see internal/outagelog).
		i.outage.Failed(ctx, "build status store operation failed", err,
			slog.String("operation", op), slog.String("buildId", buildID), slog.String("backend", i.backend))
	case "", redstate.ENOTFOUND:
		i.outage.OK(ctx)
	}
}

func (i *instrumented) Save(ctx context.Context, doc *PublishResponse, opts SaveOptions) (*Build, error) {
	start := time.Now()
	b, err := i.s.Save(ctx, doc, opts)
	id := ""
	if doc != nil {
		id = doc.BuildID
	}
	i.done(ctx, OpSave, id, start, err)
	if err == nil && i.log.Enabled(ctx, slog.LevelDebug) {
		i.log.DebugContext(ctx, "saved build status", slog.String("buildId", id), slog.Int("size", len(b.JSON)))
	}
	return b, err
}

func (i *instrumented) Get(ctx context.Context, buildID string) (*Build, error) {
	start := time.Now()
	b, err := i.s.Get(ctx, buildID)
	i.done(ctx, OpGet, buildID, start, err)
	if (err == nil || redstate.IsCode(err, redstate.ENOTFOUND)) && i.log.Enabled(ctx, slog.LevelDebug) {
		i.log.DebugContext(ctx, "read build status", slog.String("buildId", buildID), slog.Bool("found", err == nil))
	}
	return b, err
}

func (i *instrumented) GetMany(ctx context.Context, ids []string) (map[string]*Build, error) {
	start := time.Now()
	m, err := i.s.GetMany(ctx, ids)
	i.done(ctx, OpGetMany, "", start, err)
	if err == nil && i.log.Enabled(ctx, slog.LevelDebug) {
		i.log.DebugContext(ctx, "read build statuses", slog.Int("requested", len(ids)), slog.Int("found", len(m)))
	}
	return m, err
}

func (i *instrumented) Exists(ctx context.Context, buildID string) (bool, error) {
	start := time.Now()
	ok, err := i.s.Exists(ctx, buildID)
	i.done(ctx, OpExists, buildID, start, err)
	return ok, err
}

func (i *instrumented) TTL(ctx context.Context, buildID string) (time.Duration, error) {
	start := time.Now()
	d, err := i.s.TTL(ctx, buildID)
	i.done(ctx, OpTTL, buildID, start, err)
	return d, err
}

func (i *instrumented) Delete(ctx context.Context, buildID, ifMatch string) error {
	start := time.Now()
	err := i.s.Delete(ctx, buildID, ifMatch)
	i.done(ctx, OpDelete, buildID, start, err)
	if err == nil && i.log.Enabled(ctx, slog.LevelDebug) {
		i.log.DebugContext(ctx, "deleted build status", slog.String("buildId", buildID))
	}
	return err
}

func (i *instrumented) UpdatePlatform(ctx context.Context, buildID string, result *PlatformResult, ifMatch string) (*Build, error) {
	start := time.Now()
	b, err := i.s.UpdatePlatform(ctx, buildID, result, ifMatch)
	i.done(ctx, OpUpdatePlatform, buildID, start, err)
	if err == nil && i.log.Enabled(ctx, slog.LevelDebug) {
		i.log.DebugContext(ctx, "updated build platform", slog.String("buildId", buildID),
			slog.String("platform", result.Platform), slog.Int("size", len(b.JSON)))
	}
	return b, err
}

func (i *instrumented) List(ctx context.Context, cursor string, limit int) (*Page, error) {
	start := time.Now()
	p, err := i.s.List(ctx, cursor, limit)
	i.done(ctx, OpList, "", start, err)
	return p, err
}

func (i *instrumented) ListProject(ctx context.Context, projectID, cursor string, limit int) (*Page, error) {
	start := time.Now()
	p, err := i.s.ListProject(ctx, projectID, cursor, limit)
	i.done(ctx, OpListProject, "", start, err)
	return p, err
}

func (i *instrumented) Watch(ctx context.Context, buildID string) (<-chan Event, error) {
	start := time.Now()
	ch, err := i.s.Watch(ctx, buildID)
	i.done(ctx, OpWatch, buildID, start, err)
	return ch, err
}
