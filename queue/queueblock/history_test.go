package queueblock_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queueblock"
	"github.com/redstate/redstate/report"
)

// The queue block records into the environment's history: jobs enqueued through its broker,
// done and failed by its workers with the latency of those done, and the queues' sizes by
// state.
func TestOpen_RecordsIntoTheHistory(t *testing.T) {
	onBackends(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), "fail") {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		t0 := time.Now().Truncate(time.Minute)
		clock := historytest.NewClock(t0)
		store := history.NewMemoryStore(clock.Now)
		rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		env := component.Env{Redis: client, Namespace: "qbh-" + queue.NewJobID()[:8] + ":", Log: slog.New(slog.DiscardHandler),
			ShutdownTimeout: 5 * time.Second, History: rec}
		qb, err := queueblock.Open(ctx, env, mailQueueConfig(srv.URL), report.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := qb.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qb.Close(ctx) })
		p := qb.Producer("mail:queue")
		for _, body := range []string{`{"ok":1}`, `{"fail":1}`} {
			if _, err := p.Enqueue(ctx, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		deadLetters(t, qb, "mail:queue", 1)
		reader := history.NewReader(store, func() time.Time { return t0.Add(time.Minute) })
		q := history.Query{Metrics: []string{history.QueueEnqueued, history.QueueDone, history.QueueFailed, "queue.latency.p50", history.QueueSize},
			Window: "15m", Labels: map[string]string{"queue": "mail:queue"}}
		deadline := time.Now().Add(waitFor)
		for {
			if err := rec.FlushAll(ctx); err != nil {
				t.Fatal(err)
			}
			res, err := reader.Read(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			at := len(res.Times) - 1
			for res.Times[at] != t0.Unix() {
				at--
			}
			for _, s := range res.Series {
				if v := s.Values[at]; v != nil {
					got[s.Metric+s.Labels["state"]] = *v
				}
			}
			if got["queue.enqueued"] == 2 && got["queue.done"] == 1 && got["queue.failed"] == 1 && got["queue.latency.p50"] > 0 &&
				got["queue.sizedead"] == 1 && got["queue.sizepending"] == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("recorded %v", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
