package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate"
)

// Defaults of the event-stream bounds.
const (
	// DefaultMaxEventStreams bounds open event streams per process when
	// Config.MaxEventStreams is 0.
	DefaultMaxEventStreams = 10000
	// DefaultMaxEventStreamsPerClient bounds one token's (or, without auth, one address's) open
	// streams when Config.MaxEventStreamsPerClient is 0.
	DefaultMaxEventStreamsPerClient = 1000
)

// streamLimiter bounds open event streams globally and per client, so that streams cannot
// exhaust the process (every stream holds a connection, a goroutine and a queue) and one
// client cannot take them all.
type streamLimiter struct {
	max, perClient int
	gauge          prometheus.Gauge // nil without metrics

	mu       sync.Mutex
	open     int
	byClient map[string]int
}

// newStreamLimiter returns a limiter; gauge (may be nil) tracks the open streams.
func newStreamLimiter(max, perClient int, gauge prometheus.Gauge) *streamLimiter {
	return &streamLimiter{max: max, perClient: perClient, gauge: gauge, byClient: make(map[string]int)}
}

// acquire admits one stream of client, returning its release function. Errors:
// ETOOMANYREQUESTS naming the bound that was reached.
func (l *streamLimiter) acquire(client string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.max:
		return nil, redstate.Wrap(ETOOMANYREQUESTS, retryAfter(5*time.Second),
			"this server has the most event streams it serves open ("+strconv.Itoa(l.max)+", server.max-event-streams); retry later")
	case l.byClient[client] >= l.perClient:
		return nil, redstate.Wrap(ETOOMANYREQUESTS, retryAfter(5*time.Second),
			"this client has the most event streams it may open ("+strconv.Itoa(l.perClient)+", server.max-event-streams-per-client); close one first")
	}
	l.open++
	l.byClient[client]++
	if l.gauge != nil {
		l.gauge.Inc()
	}
	var once sync.Once
	return func() { once.Do(func() { l.release(client) }) }, nil
}

// release ends one stream of client.
func (l *streamLimiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
	if l.gauge != nil {
		l.gauge.Dec()
	}
}

// streamClient identifies the client of an event stream for the per-client bound: its token's
// name when auth is on, else its address (see clientKey).
func streamClient(r *http.Request) string {
	if name := requestInfoOf(r.Context()).token; name != "" {
		return "token:" + name
	}
	return "addr:" + clientKey(r)
}
