package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is 0.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultHeartbeatInterval is the SSE keep-alive interval when Config.HeartbeatInterval is 0.
	DefaultHeartbeatInterval = 15 * time.Second
)

// Config configures the API.
type Config struct {
	// Tokens are the accepted bearer tokens and their roles; empty turns auth off.
	Tokens []config.Token
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes, 1 MiB).
	MaxBodyBytes int64
	// MaxJSONDepth bounds how deeply a request body's objects and arrays may nest (default
	// DefaultMaxJSONDepth); a deeper body is 400 invalid.
	MaxJSONDepth int
	// Logger receives request logs and internal errors (default slog.Default()).
	Logger *slog.Logger
	// Registerer is where the HTTP metrics are registered (nil: no HTTP metrics).
	Registerer prometheus.Registerer
	// Gatherer is served on /metrics (nil: prometheus.DefaultGatherer).
	Gatherer prometheus.Gatherer
	// HeartbeatInterval is the SSE keep-alive comment interval (default 15s).
	HeartbeatInterval time.Duration
	// AllowedHosts, when not empty, are the only host names accepted in the Host header (any
	// port); others are answered 421. Serve sets it for loopback listeners (see LoopbackHosts)
	// to defeat DNS rebinding.
	AllowedHosts []string
	// CORSOrigins are browser origins ("https://ops.example.com") allowed to call the API
	// cross-origin, state-changing requests included; default none.
	CORSOrigins []string
	// MaxResponseBytes bounds a batch read's response (default DefaultMaxResponseBytes); ids
	// past it are answered as "deferred".
	MaxResponseBytes int64
	// MaxHeavyReads bounds the listings and batch reads that may answer more than 100 builds
	// served at once (default DefaultMaxHeavyReads); more wait up to HeavyReadWait for a slot,
	// then are 429.
	MaxHeavyReads int
	// HeavyReadWait is how long a heavy read waits for a slot (default DefaultHeavyReadWait).
	HeavyReadWait time.Duration
	// ChunkWriteTimeout bounds writing one chunk of a streamed listing or batch read (default
	// DefaultChunkWriteTimeout): a client that stops reading is dropped after it.
	ChunkWriteTimeout time.Duration
	// WriteTimeout is the http.Server's write timeout, which streamed responses keep as their
	// overall bound while they set per-chunk deadlines (0: no overall bound).
	WriteTimeout time.Duration
	// MaxEventStreams bounds the event streams open at once (default DefaultMaxEventStreams);
	// past it a new stream is 429.
	MaxEventStreams int
	// MaxEventStreamsPerClient bounds one token's (without auth: one address's) open event
	// streams (default DefaultMaxEventStreamsPerClient); past it a new stream is 429.
	MaxEventStreamsPerClient int
	// FailedAuthPerMinute bounds failed authentication attempts per client address (default
	// DefaultFailedAuthPerMinute); past it requests are answered 429 until the budget refills.
	FailedAuthPerMinute int
	// DashboardPollInterval is how often a dashboard topic without change events of its own is
	// read while a stream subscribes to it (default DefaultDashboardPollInterval).
	DashboardPollInterval time.Duration
	// DashboardUpdatesPerSecond bounds the changes one dashboard topic announces per second
	// (default DefaultDashboardUpdatesPerSecond); changes in between coalesce.
	DashboardUpdatesPerSecond int
	// DashboardMaxTopics bounds the topics of one dashboard stream (default
	// DefaultDashboardMaxTopics).
	DashboardMaxTopics int
}

// Deps are the services the API serves.
type Deps struct {
	// Builds is the build-status registry (required).
	Builds buildstatus.Store
	// Health reports every component's status (the composition root's); /readyz answers 503
	// while one of them is unready. Nil: always ready.
	Health func(ctx context.Context) []component.Status
	// Reports is the seed-004 report flow (/api/assessment/..., /api/admin/assessmentRecord/...);
	// nil: those routes answer 404.
	Reports *report.Service
	// Queues returns the admin of a configured queue, or nil for an unknown name
	// (/v1/queues/{queue}/...); nil: every queue is unknown (404).
	Queues func(name string) *queue.Admin
	// Producers returns a producer of a configured queue, or nil for an unknown name (POST
	// /v1/queues/{queue}/jobs); nil: no queue takes jobs over HTTP (404).
	Producers func(name string) *queue.Producer
	// Executor is the stage executor (/v1/executor/...); nil: those routes answer 404 unless
	// ExecutorRunner is set.
	Executor *executor.Runner
	// ExecutorRunner, when set, supplies the executor per request instead of Executor: an
	// error (EUNAVAILABLE while the executor is degraded) is the answer.
	ExecutorRunner func() (*executor.Runner, error)
	// Index is the CDC tag index (/v1/index/...); nil: those routes answer 404.
	Index *index.Indexer
	// IndexPush counts the batches of POST /v1/index/events, the index's push source; nil:
	// not counted.
	IndexPush *index.PushSource
	// Feed is the feed read/unread state block (/v1/feed/...); nil: those routes answer 404.
	Feed *feed.Service
	// Overview fills GET /v1/overview (the dashboard's first page); nil: 404.
	Overview func(ctx context.Context) Overview
	// QueueNames lists the configured queues (GET /v1/queues), sorted; nil: none.
	QueueNames func() []string
	// QueuePool tells the pool of queue.pools serving a queue (GET /v1/queues, .../stats); nil,
	// or a nil answer: the queue is in no pool.
	QueuePool func(name string) *queue.PoolMembership
	// Throughput holds the shared per-minute job counts (GET /v1/queues/{queue}/throughput);
	// nil: 404.
	Throughput queue.ThroughputStore
	// IndexSources reports the index's change sources' progress (GET /v1/index/status); nil:
	// none.
	IndexSources func() []IndexSourceStatus
	// ExecutorLister lists plans, locks (fence, time left) and checkpoints for
	// GET /v1/executor/state; nil: locks from the executor's inspector only.
	ExecutorLister ExecutorLister
	// History answers GET /v1/stats/series and /v1/stats/metrics (the charts' data); nil:
	// 404.
	History *history.Reader
}

// server is the API's http.Handler.
type server struct {
	mux          *http.ServeMux
	builds       buildstatus.Store
	health       func(ctx context.Context) []component.Status
	auth         *authenticator
	throttle     *authThrottle
	streams      *streamLimiter
	guard        *guard
	metrics      *httpMetrics
	logger       *slog.Logger
	maxBody      int64
	maxDepth     int
	maxResponse  int64
	heavy        *heavyReads
	chunkWrite   time.Duration
	writeTimeout time.Duration
	heartbeat    time.Duration
	reports      *report.Service
	queues       func(name string) *queue.Admin
	producers    func(name string) *queue.Producer
	executor     *executor.Runner
	execFn       func() (*executor.Runner, error)
	index        *index.Indexer
	feed         *feed.Service
	overviewFn   func(ctx context.Context) Overview
	queueNames   func() []string
	queuePool    func(name string) *queue.PoolMembership
	throughput   queue.ThroughputStore
	indexSources func() []IndexSourceStatus
	indexPush    *index.PushSource
	execLister   ExecutorLister
	ui           *uiHub
	uiMaxTopics  int
	execHooks    executorHooks
	history      *history.Reader
	// registered lists every route in registration order, for the OpenAPI tests.
	registered []registeredRoute
}

// registeredRoute is one pattern passed to handle and the role it needs.
type registeredRoute struct {
	pattern string
	role    role
}

// New returns the HTTP handler of the API. It applies cfg's defaults and validates it: an
// unknown role, a token without secret or roles, or a negative limit is an error.
func New(cfg Config, deps Deps) (http.Handler, error) {
	if deps.Builds == nil {
		return nil, errors.New("httpapi: Deps.Builds is required")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("httpapi: MaxBodyBytes must not be negative, got %d", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxJSONDepth < 0 {
		return nil, fmt.Errorf("httpapi: MaxJSONDepth must not be negative, got %d", cfg.MaxJSONDepth)
	}
	if cfg.MaxJSONDepth == 0 {
		cfg.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if cfg.HeartbeatInterval < 0 {
		return nil, fmt.Errorf("httpapi: HeartbeatInterval must not be negative, got %s", cfg.HeartbeatInterval)
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	if cfg.FailedAuthPerMinute < 0 {
		return nil, fmt.Errorf("httpapi: FailedAuthPerMinute must not be negative, got %d", cfg.FailedAuthPerMinute)
	}
	if cfg.FailedAuthPerMinute == 0 {
		cfg.FailedAuthPerMinute = DefaultFailedAuthPerMinute
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("httpapi: MaxResponseBytes must not be negative")
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxHeavyReads < 0 || cfg.HeavyReadWait < 0 || cfg.ChunkWriteTimeout < 0 || cfg.WriteTimeout < 0 {
		return nil, fmt.Errorf("httpapi: heavy-read bounds and timeouts must not be negative")
	}
	if cfg.MaxHeavyReads == 0 {
		cfg.MaxHeavyReads = DefaultMaxHeavyReads
	}
	if cfg.HeavyReadWait == 0 {
		cfg.HeavyReadWait = DefaultHeavyReadWait
	}
	if cfg.ChunkWriteTimeout == 0 {
		cfg.ChunkWriteTimeout = DefaultChunkWriteTimeout
	}
	if cfg.MaxEventStreams < 0 || cfg.MaxEventStreamsPerClient < 0 {
		return nil, fmt.Errorf("httpapi: event stream bounds must not be negative")
	}
	if cfg.MaxEventStreams == 0 {
		cfg.MaxEventStreams = DefaultMaxEventStreams
	}
	if cfg.MaxEventStreamsPerClient == 0 {
		cfg.MaxEventStreamsPerClient = DefaultMaxEventStreamsPerClient
	}
	if cfg.DashboardPollInterval < 0 || cfg.DashboardUpdatesPerSecond < 0 || cfg.DashboardMaxTopics < 0 {
		return nil, fmt.Errorf("httpapi: dashboard stream settings must not be negative")
	}
	if cfg.DashboardPollInterval == 0 {
		cfg.DashboardPollInterval = DefaultDashboardPollInterval
	}
	if cfg.DashboardUpdatesPerSecond == 0 {
		cfg.DashboardUpdatesPerSecond = DefaultDashboardUpdatesPerSecond
	}
	if cfg.DashboardMaxTopics == 0 {
		cfg.DashboardMaxTopics = DefaultDashboardMaxTopics
	}
	auth, err := newAuthenticator(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	g, err := newGuard(cfg.AllowedHosts, cfg.CORSOrigins)
	if err != nil {
		return nil, err
	}
	metrics, err := newHTTPMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
	}
	metrics.setStreamLimit(cfg.MaxEventStreams)
	s := &server{
		mux:          http.NewServeMux(),
		builds:       deps.Builds,
		health:       deps.Health,
		auth:         auth,
		throttle:     newAuthThrottle(cfg.FailedAuthPerMinute),
		streams:      newStreamLimiter(cfg.MaxEventStreams, cfg.MaxEventStreamsPerClient, metrics.streamGauge()),
		guard:        g,
		metrics:      metrics,
		logger:       cfg.Logger,
		maxBody:      cfg.MaxBodyBytes,
		maxDepth:     cfg.MaxJSONDepth,
		maxResponse:  cfg.MaxResponseBytes,
		heavy:        newHeavyReads(cfg.MaxHeavyReads, cfg.HeavyReadWait),
		chunkWrite:   cfg.ChunkWriteTimeout,
		writeTimeout: cfg.WriteTimeout,
		heartbeat:    cfg.HeartbeatInterval,
		reports:      deps.Reports,
		queues:       deps.Queues,
		producers:    deps.Producers,
		executor:     deps.Executor,
		execFn:       deps.ExecutorRunner,
		index:        deps.Index,
		feed:         deps.Feed,
		overviewFn:   deps.Overview,
		queueNames:   deps.QueueNames,
		queuePool:    deps.QueuePool,
		throughput:   deps.Throughput,
		indexSources: deps.IndexSources,
		indexPush:    deps.IndexPush,
		execLister:   deps.ExecutorLister,
		ui:           newUIHub(cfg.DashboardPollInterval, cfg.DashboardUpdatesPerSecond, cfg.Logger),
		uiMaxTopics:  cfg.DashboardMaxTopics,
		history:      deps.History,
	}
	s.routes(promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	return s, nil
}

// routes registers every route with the role it needs. GET patterns also serve HEAD unless a
// HEAD pattern is registered.
func (s *server) routes(metricsHandler http.Handler) {
	s.handle("PUT /v1/builds/{buildId}", roleWrite, s.putBuild)
	s.handle("GET /v1/builds/{buildId}", roleRead, s.getBuild)
	s.handle("HEAD /v1/builds/{buildId}", roleRead, s.headBuild)
	s.handle("DELETE /v1/builds/{buildId}", roleWrite, s.deleteBuild)
	s.handle("PATCH /v1/builds/{buildId}/platforms/{platform}", roleWrite, s.patchPlatform)
	s.handle("GET /v1/builds/{buildId}/events", roleRead, s.buildEvents)
	s.handle("GET /v1/builds", roleRead, s.listBuilds)
	s.handle("GET /v1/projects/{projectId}/builds", roleRead, s.listProjectBuilds)
	s.handle("GET /v1/ui/events", roleRead, s.uiEvents)
	s.reportRoutes()
	s.indexRoutes()
	s.feedRoutes()
	s.queueRoutes()
	s.executorRoutes()
	s.overviewRoutes()
	s.statsRoutes()
	s.uiSessionRoutes()
	s.uiRoutes()
	s.handle("GET /healthz", roleNone, s.healthz)
	s.handle("GET /readyz", roleNone, s.readyz)
	s.handle("GET /openapi.json", roleNone, s.openAPI)
	s.handle("GET /metrics", roleRead, func(w http.ResponseWriter, r *http.Request) error {
		metricsHandler.ServeHTTP(w, r)
		return nil
	})
}

// authorize checks r's token for role need, throttling clients that keep failing. A refused
// request's connection is closed after the answer, so its body is never drained (a client
// cannot hold the connection by announcing a body it does not send). Errors: EUNAUTHORIZED,
// EFORBIDDEN, ETOOMANYREQUESTS.
func (s *server) authorize(w http.ResponseWriter, r *http.Request, need role) (string, error) {
	if need == roleNone || !s.auth.enabled() {
		return "", nil
	}
	if err := s.throttle.blocked(r); err != nil {
		w.Header().Set("Connection", "close")
		return "", err
	}
	var name string
	var err error
	if sess, ok, serr := s.auth.sessionOf(r, time.Now()); ok && r.Header.Get("Authorization") == "" {
		if serr == nil {
			name, err = s.auth.authorizeSession(r, sess, need)
		} else {
			err = serr
		}
	} else {
		name, err = s.auth.authorize(r, need)
	}
	if err != nil {
		w.Header().Set("Connection", "close")
		if redstate.IsCode(err, redstate.EUNAUTHORIZED) {
			s.throttle.failed(r)
		}
	}
	return name, err
}

// handlerFunc is a route handler. An error it returns is written as a JSON error response,
// unless the handler has already started its response.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers h under pattern behind the role check. It records the matched pattern for
// logs and metrics.
func (s *server) handle(pattern string, need role, h handlerFunc) {
	s.registered = append(s.registered, registeredRoute{pattern: pattern, role: need})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info := requestInfoOf(r.Context())
		info.route = r.Pattern
		name, err := s.authorize(w, r, need)
		info.token = name
		if err == nil {
			err = checkContentType(r)
		}
		if err == nil {
			err = checkQuery(pattern, r.URL)
		}
		if err == nil {
			err = h(w, r)
		}
		if err == nil {
			return
		}
		if rec, ok := w.(*recorder); ok && rec.status != 0 {
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "error after response started",
				slog.String("request_id", info.id), slog.String("route", info.route), slog.Any("error", err))
			return
		}
		s.writeError(w, r, err)
	})
}
