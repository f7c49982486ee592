//go:build soak

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
)

// TestSoak_TenThousandStreams opens 10,000 event streams on one redstate process whose Redis
// accepts only 500 clients (the hardening issue's setup), and measures what they cost: Redis
// connections, and the latency of PUTs with and without the streams. Every PUT must succeed and
// the streams must use at most a handful of Redis connections. The server is built without the
// race detector, whose goroutine limit (8,128) 10,000 streams exceed. The numbers are logged
// (run with -v) and recorded in docs/buildstatus.md.
func TestSoak_TenThousandStreams(t *testing.T) {
	const streams, builds = 10000, 100
	useNonRaceBinary(t)

	rs := redistest.StartStandalone(t, redistest.WithConfig("maxclients", "500"))
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	t.Setenv("REDSTATE_SERVER_MAX_EVENT_STREAMS", "20000")
	t.Setenv("REDSTATE_SERVER_MAX_EVENT_STREAMS_PER_CLIENT", "20000")
	srv := startServer(t, "--redis", rs.URL)

	ids := make([]string, builds)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1)
		body := strings.ReplaceAll(sampleBuild, sampleID, ids[i])
		if code, b, _ := srv.do(t, http.MethodPut, "/v1/builds/"+ids[i], body); code != http.StatusOK {
			t.Fatalf("PUT: %d %s", code, b)
		}
	}
	measure := func() (p50, p99 time.Duration) {
		var lat []time.Duration
		for i := range 1000 {
			id := ids[i%builds]
			body := strings.ReplaceAll(sampleBuild, sampleID, id)
			start := time.Now()
			if code, b, _ := srv.do(t, http.MethodPut, "/v1/builds/"+id, body); code != http.StatusOK {
				t.Fatalf("PUT #%d: %d %s", i, code, b)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	base50, base99 := measure()

	addr := strings.TrimPrefix(srv.Base, "http://")
	conns := make([]net.Conn, 0, streams)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	opened := time.Now()
	for i := range streams {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /v1/builds/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", ids[i%builds])
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		status, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(status, " 200 ") {
			t.Fatalf("stream %d: %q %v\nserver logs:\n%s", i, status, err, srv.Logs())
		}
	}
	openTime := time.Since(opened)

	list, err := rc.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	clients, subscribed := 0, 0
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		clients++
		if !strings.Contains(line, " sub=0 ") {
			subscribed++
		}
	}
	with50, with99 := measure()
	t.Logf("%d streams opened in %s; Redis clients: %d in all (this test's own included), %d subscribed", streams, openTime.Round(time.Millisecond), clients, subscribed)
	t.Logf("PUT latency without streams: p50 %s p99 %s; with %d streams (each PUT fans out to %d): p50 %s p99 %s",
		base50.Round(time.Microsecond), base99.Round(time.Microsecond), streams, streams/builds,
		with50.Round(time.Microsecond), with99.Round(time.Microsecond))
	if subscribed > 2 || clients > 40 {
		t.Fatalf("%d streams use %d Redis clients (%d subscribed); want a handful", streams, clients, subscribed)
	}
}
