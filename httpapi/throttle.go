package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/redstate/redstate"
)

// ETOOMANYREQUESTS: a client exceeded a rate or concurrency bound (failed authentication
// attempts, open event streams). The response carries Retry-After. HTTP 429.
const ETOOMANYREQUESTS = "too_many_requests"

// DefaultFailedAuthPerMinute is the failed-authentication budget per client address when
// Config.FailedAuthPerMinute is 0.
const DefaultFailedAuthPerMinute = 30

// maxThrottledClients bounds the per-client failure table; past it, clients whose budget is
// full again are forgotten first.
const maxThrottledClients = 10000

// authThrottle limits failed authentication attempts per client address (IPv4 address, IPv6
// /64), so a token cannot be guessed at network speed. Successful requests cost nothing.
type authThrottle struct {
	perMinute int
	mu        sync.Mutex
	clients   map[string]*rate.Limiter
}

// newAuthThrottle returns a throttle allowing perMinute failures a minute per client, in bursts
// of up to perMinute.
func newAuthThrottle(perMinute int) *authThrottle {
	return &authThrottle{perMinute: perMinute, clients: make(map[string]*rate.Limiter)}
}

// limiter returns the client's limiter, creating it (and pruning the table) when needed.
func (t *authThrottle) limiter(client string) *rate.Limiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.clients[client]; ok {
		return l
	}
	if len(t.clients) >= maxThrottledClients {
		now := time.Now()
		for k, l := range t.clients {
			if l.TokensAt(now) >= float64(t.perMinute) {
				delete(t.clients, k)
			}
		}
		if len(t.clients) >= maxThrottledClients {
			clear(t.clients) // every entry is mid-attack: forget them rather than grow without bound
		}
	}
	l := rate.NewLimiter(rate.Every(time.Minute/time.Duration(t.perMinute)), t.perMinute)
	t.clients[client] = l
	return l
}

// blocked returns an ETOOMANYREQUESTS error when r's client has no failed attempts left.
func (t *authThrottle) blocked(r *http.Request) error {
	l := t.limiter(clientKey(r))
	tokens := l.Tokens()
	if tokens >= 1 {
		return nil
	}
	wait := max(time.Second, time.Duration((1-tokens)*float64(time.Minute)/float64(t.perMinute)))
	return redstate.Wrap(ETOOMANYREQUESTS, retryAfter(wait),
		"too many failed authentication attempts from this address; retry after "+
			strconv.Itoa(int(wait.Round(time.Second).Seconds()))+"s")
}

// failed records one failed attempt of r's client.
func (t *authThrottle) failed(r *http.Request) {
	t.limiter(clientKey(r)).Allow()
}

// retryAfter is the cause of an ETOOMANYREQUESTS error: how long the client should wait.
// writeError sends it as the Retry-After header.
type retryAfter time.Duration

// Error implements error.
func (d retryAfter) Error() string { return "retry after " + time.Duration(d).String() }

// clientKey identifies a request's client for throttling: its IPv4 address or IPv6 /64. Proxy
// headers are not trusted.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String()
}
