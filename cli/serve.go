package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/metrics"
)

// closeMargin is what closing gets beyond server.shutdown-timeout (which bounds running jobs
// and stages) to release stores, pools and the Redis client.
const closeMargin = 5 * time.Second

// readHeaderTimeout bounds reading request headers (server.read-timeout bounds the whole
// request when shorter).
const readHeaderTimeout = 10 * time.Second

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		Long: `Serve the HTTP/JSON API (see README.md for the routes).

Without Redis configured, serve runs on the embedded memory backend. With --redis,
--redis-cluster or --redis-sentinel it stores everything in Redis; if Redis is unreachable
at startup it still starts (loudly), the resilience policy (--policy) applies per request and
/readyz answers 503.

serve also runs the job queues of queue.queues (default: report:queue with the built-in
report generator, the seed-004 report flow) on the same backend, one worker per queue.

serve refuses a non-loopback --addr unless auth tokens are configured or --insecure is given.
It logs "listening on ADDR" (field addr) once bound, so --addr 127.0.0.1:0 works.
SIGTERM or SIGINT shuts down gracefully: no new connections, in-flight requests finish
(server.shutdown-timeout), event streams are closed, queue workers stop taking jobs and let running
jobs finish (server.shutdown-timeout), stores and the Redis client are closed,
and the exit code is 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serve(ctx, cfg, cmd.ErrOrStderr())
		},
	}
	config.BindFlags(cmd.Flags())
	return cmd
}

// serve runs the server until ctx ends, then shuts down gracefully and returns nil. Logs go to
// logOut. cfg must be valid.
func serve(ctx context.Context, cfg config.Config, logOut io.Writer) error {
	log, err := newLogger(cfg.Log, logOut)
	if err != nil {
		return err
	}
	redisLogTarget.Store(log)
	if err := checkExposure(cfg.Server, len(cfg.Auth.Tokens)); err != nil {
		return err
	}
	if err := checkTokenStrength(cfg, log); err != nil {
		return err
	}
	if cfg.Demo {
		log.Warn("demo mode: an example index table (db1.table1), the built-in stage handler \"steps\" and a 30 s report generator are added under your configuration; not for production (docs/getting-started.md)")
	}
	if cfg.Server.Insecure && len(cfg.Auth.Tokens) == 0 && !isLoopbackAddr(cfg.Server.Addr) {
		log.Warn("INSECURE: serving a non-loopback address without auth tokens; anyone who can reach it can read and write builds",
			"addr", cfg.Server.Addr)
	}

	m := metrics.New()
	a, err := newApp(cfg, m, log)
	if err != nil {
		return err
	}
	a.createsSQL = true
	// Everything the root opened is closed on every return, in reverse start order, within
	// server.shutdown-timeout (running jobs and stages get that long to finish) plus a margin.
	defer a.closeWithin(cfg.Server.ShutdownTimeout + closeMargin)
	blocks, err := a.openBlocks(ctx)
	if err != nil {
		return err
	}

	reg := m.Registry()
	handler, err := httpapi.New(httpapi.Config{
		Tokens:                    cfg.Auth.Tokens,
		MaxBodyBytes:              cfg.Server.MaxBodyBytes,
		MaxJSONDepth:              cfg.Server.MaxJSONDepth,
		Logger:                    log,
		Registerer:                reg,
		Gatherer:                  reg,
		AllowedHosts:              allowedHosts(cfg.Server),
		CORSOrigins:               cfg.Server.CORS.AllowedOrigins,
		FailedAuthPerMinute:       cfg.Auth.FailedAttemptsPerMinute,
		MaxResponseBytes:          cfg.Server.MaxResponseBytes,
		MaxHeavyReads:             cfg.Server.MaxHeavyReads,
		HeavyReadWait:             cfg.Server.HeavyReadWait,
		ChunkWriteTimeout:         cfg.Server.ChunkWriteTimeout,
		WriteTimeout:              cfg.Server.WriteTimeout,
		MaxEventStreams:           cfg.Server.MaxEventStreams,
		MaxEventStreamsPerClient:  cfg.Server.MaxEventStreamsPerClient,
		DashboardPollInterval:     cfg.Server.DashboardPollInterval,
		DashboardUpdatesPerSecond: cfg.Server.DashboardUpdatesPerSecond,
		DashboardMaxTopics:        cfg.Server.DashboardMaxTopics,
	}, blocks.deps(a))
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
	}
	ln = netutil.LimitListener(ln, cfg.Server.MaxConnections)
	// Workers, the executor, index sources and the fan-out stop taking work when ctx ends
	// (SIGTERM); the root's close lets running work finish.
	if err := a.start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	streams := newStreamCloser()
	srv := &http.Server{
		Handler:           streams.Wrap(handler),
		ReadHeaderTimeout: min(readHeaderTimeout, cfg.Server.ReadTimeout),
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	log.Info("listening on "+addr, "addr", addr, "backend", blocks.builds.Backend(), "auth", len(cfg.Auth.Tokens) > 0)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	}

	log.Info("shutting down", "timeout", cfg.Server.ShutdownTimeout.String())
	streams.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("in-flight requests did not finish within the shutdown timeout; closing their connections", "error", err)
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http server", "error", err)
	}
	a.closeWithin(cfg.Server.ShutdownTimeout + closeMargin)
	log.Info("stopped")
	return nil
}

// checkExposure refuses a non-loopback listen address without auth tokens unless insecure.
func checkExposure(s config.Server, tokens int) error {
	if s.Insecure || tokens > 0 || isLoopbackAddr(s.Addr) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without auth tokens: it is not a loopback address "+
		"(127.0.0.0/8, ::1, localhost), so anyone who can reach it could read, overwrite and delete builds. "+
		"Fix one of: configure auth.tokens (e.g. REDSTATE_AUTH_TOKENS=\"ci:<secret>:write+read\"); "+
		"listen on loopback (--addr 127.0.0.1:8080); or pass --insecure (server.insecure: true) if the network is trusted",
		s.Addr)
}

// checkTokenStrength refuses tokens shorter than config.MinTokenLength on a non-loopback
// listener and warns about them on loopback.
func checkTokenStrength(cfg config.Config, log *slog.Logger) error {
	for _, t := range cfg.Auth.Tokens {
		if len(t.Token) >= config.MinTokenLength {
			continue
		}
		if !isLoopbackAddr(cfg.Server.Addr) {
			return fmt.Errorf("refusing to listen on %s: auth token %q has %d characters, fewer than the %d required off loopback; "+
				"generate one with e.g. `openssl rand -hex 24`", cfg.Server.Addr, t.Name, len(t.Token), config.MinTokenLength)
		}
		log.Warn("weak auth token: fine on loopback, refused on any other address", "token", t.Name,
			"length", len(t.Token), "minimum", config.MinTokenLength)
	}
	return nil
}

// allowedHosts returns the Host names a loopback listener answers (DNS-rebinding defence), or
// nil (any Host) for other listeners.
func allowedHosts(s config.Server) []string {
	if !isLoopbackAddr(s.Addr) {
		return nil
	}
	return httpapi.LoopbackHosts(s.Addr, s.AllowedHosts)
}

// isLoopbackAddr reports whether the host of a host:port listen address is a loopback address
// or "localhost". An empty host (all interfaces) is not.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // zone of an IPv6 link-local address
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
