package redisrecords_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/redisrecords"
)

// TestResend_SubmitAndCreateAreTheirOwn: Redis stalls longer than the client's read timeout
// while a record is submitted (or created); go-redis sends the script again and both copies run
// when Redis continues (redistest.RunStalled). The copy found the record already in status 3
// (already created) and answered 2005 "当前状态不允许" (or "exists"), so a submit that took
// effect failed and enqueued no job. Now the copy recognises the call's own write.
func TestResend_SubmitAndCreateAreTheirOwn(t *testing.T) {
	srv := redistest.StartStandalone(t)
	rs := mustRecords(t, srv.ResendClient(t), redisrecords.Options{Namespace: uniqueNS()})
	ctx := context.Background()
	answers := json.RawMessage(`{"q":[1,2,3]}`)
	if _, err := rs.Submit(ctx, 1, answers); err != nil {
		t.Fatal(err) // loads the script
	}
	isScript := func(c redis.Cmder) bool { return c.Name() == "evalsha" }
	var rec *report.Record
	var err error
	runs := srv.RunStalled(t, isScript, func() { rec, err = rs.Submit(ctx, 2, answers) }, "evalsha")
	if err != nil || rec.Status != report.StatusGenerating {
		t.Fatalf("Submit = %+v, %v; want status 3", rec, err)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d scripts during the stall, want 2 (the call and its copy)", runs)
	}
	runs = srv.RunStalled(t, isScript, func() { rec, err = rs.Create(ctx, 3, report.StatusFailed, nil) }, "evalsha")
	if err != nil || rec.Status != report.StatusFailed {
		t.Fatalf("Create = %+v, %v; want status 5", rec, err)
	}
	if runs != 2 {
		t.Fatalf("clients sent %d scripts during the stall, want 2 (the call and its copy)", runs)
	}
	if _, err := rs.Submit(ctx, 2, answers); report.BusinessCode(err) != report.CodeInvalidOperation {
		t.Fatalf("a second submit of a record in status 3: %v, want 2005", err)
	}
}
