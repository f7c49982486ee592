package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

// bury puts a job for id on the report queue's dead-letter list.
func (ra *reportAPI) bury(t *testing.T, id int64) {
	t.Helper()
	ctx := context.Background()
	if err := ra.broker.Enqueue(ctx, report.DefaultQueue, report.NewJob(id, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if err := ra.broker.Heartbeat(ctx, report.DefaultQueue, "c1", time.Minute); err != nil {
		t.Fatal(err)
	}
	d, err := ra.broker.Dequeue(ctx, report.DefaultQueue, "c1", time.Second)
	if err != nil || d == nil {
		t.Fatalf("dequeue: %v %v", d, err)
	}
	if err := ra.broker.Bury(ctx, d, d.Message); err != nil {
		t.Fatal(err)
	}
}

func TestQueues_StatsAndDeadLetters(t *testing.T) {
	ra := newReportAPI(t, false)
	ra.bury(t, 1)
	ra.bury(t, 2)
	if err := ra.broker.Enqueue(context.Background(), report.DefaultQueue, report.NewJob(3, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"/v1/queues/report:queue/stats", "/v1/queues/report%3Aqueue/stats", "/v1/queues/report%3aqueue/stats"} {
		r := ra.do("GET", p, "")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		st := decode[map[string]any](t, r)
		if st["queue"] != "report:queue" || st["pending"] != float64(1) || st["dead"] != float64(2) || st["running"] != float64(0) || st["retrying"] != float64(0) {
			t.Errorf("%s: %s", p, r.body)
		}
	}

	r := ra.do("GET", "/v1/queues/report:queue/dead?start=0&count=100", "")
	dl := decode[queue.DeadLetterPage](t, r)
	if r.status != 200 || len(dl.DeadLetters) != 2 || dl.DeadLetters[0].Message == nil || recordOf(dl.DeadLetters[0].Message) != 2 {
		t.Fatalf("dead: %d %s", r.status, r.body)
	}
	if r := decode[queue.DeadLetterPage](t, ra.do("GET", "/v1/queues/report:queue/dead?count=1&start=1", "")); len(r.DeadLetters) != 1 || recordOf(r.DeadLetters[0].Message) != 1 {
		t.Errorf("page: %+v", r)
	}
	wantError(t, ra.do("GET", "/v1/queues/report:queue/dead?count=0", ""), 400, "invalid")
	wantError(t, ra.do("GET", "/v1/queues/report:queue/dead?count=x", ""), 400, "invalid")
	wantError(t, ra.do("GET", "/v1/queues/report:queue/dead?start=-1", ""), 400, "invalid")

	r = ra.do("POST", "/v1/queues/report:queue/dead/requeue", mustJSON(map[string]string{"raw": dl.DeadLetters[0].Raw}))
	if r.status != 200 || decode[map[string]any](t, r)["requeued"] != float64(1) {
		t.Fatalf("requeue: %d %s", r.status, r.body)
	}
	wantError(t, ra.do("POST", "/v1/queues/report:queue/dead/requeue", mustJSON(map[string]string{"raw": dl.DeadLetters[0].Raw})), 404, "not_found")
	wantError(t, ra.do("POST", "/v1/queues/report:queue/dead/requeue", `{}`), 400, "invalid")

	ra.bury(t, 4)
	r = ra.do("POST", "/v1/queues/report:queue/dead/requeue-all", "")
	if r.status != 200 || decode[map[string]any](t, r)["requeued"] != float64(2) {
		t.Fatalf("requeue-all: %d %s", r.status, r.body)
	}
	ra.bury(t, 5)
	r = ra.do("DELETE", "/v1/queues/report:queue/dead", "")
	if r.status != 200 || decode[map[string]any](t, r)["purged"] != float64(1) {
		t.Fatalf("purge: %d %s", r.status, r.body)
	}
	if st, _ := ra.broker.Stats(context.Background(), report.DefaultQueue); st.Dead != 0 || st.Pending != 4 {
		t.Errorf("stats after: %+v", st)
	}
}

func TestQueues_UnknownAndInvalid(t *testing.T) {
	ra := newReportAPI(t, false)
	wantError(t, ra.do("GET", "/v1/queues/other:queue/stats", ""), http.StatusNotFound, "not_found")
	wantError(t, ra.do("GET", "/v1/queues/bad%20name/stats", ""), http.StatusBadRequest, "invalid")
	wantError(t, ra.do("PUT", "/v1/queues/report:queue/dead", ""), http.StatusMethodNotAllowed, "method_not_allowed")
}

// recordOf returns the record id of a dead letter's report job, 0 if it has none.
func recordOf(m *queue.Message) int64 {
	if m == nil {
		return 0
	}
	id, _ := report.RecordIDOf(*m)
	return id
}
