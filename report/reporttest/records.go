package reporttest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/report"
)

// RunRecordStoreSuite runs every RecordStore conformance test against the backend newRecords
// creates. Retention is backend configuration and is tested by each backend.
func RunRecordStoreSuite(t *testing.T, newRecords NewRecordStore) {
	ctx := context.Background()
	answers := json.RawMessage(`{"q1":"A","q2":[1,2]}`)
	result := json.RawMessage(`{"score":87,"level":"高 🎯"}`)
	create := func(t *testing.T, rs report.RecordStore, status int) int64 {
		t.Helper()
		id := queuetest.NewIDs(1)[0]
		if _, err := rs.Create(ctx, id, status, answers); err != nil {
			t.Fatalf("Create(status %d): %v", status, err)
		}
		return id
	}
	get := func(t *testing.T, rs report.RecordStore, id int64) *report.Record {
		t.Helper()
		r, err := rs.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		return r
	}
	queuetest.RunGroups(t, map[string][]queuetest.NamedTest{"Records": {
		{Name: "CreateGet", Run: func(t *testing.T) {
			rs := newRecords(t)
			for status := report.StatusPending; status <= report.StatusFailed; status++ {
				id := create(t, rs, status)
				r := get(t, rs, id)
				if r.ID != id || r.Status != status || r.StatusText != report.StatusText(status) || string(r.Answers) != string(answers) || r.UpdatedAt.IsZero() {
					t.Fatalf("Get = %+v", r)
				}
			}
		}},
		{Name: "Errors", Run: func(t *testing.T) {
			rs := newRecords(t)
			id := create(t, rs, report.StatusGenerating)
			_, err := rs.Create(ctx, id, report.StatusGenerating, nil)
			wantCode(t, err, redstate.ECONFLICT)
			_, err = rs.Create(ctx, queuetest.NewIDs(1)[0], 9, nil)
			wantCode(t, err, redstate.EINVALID)
			_, err = rs.Create(ctx, 0, 1, nil)
			wantCode(t, err, redstate.EINVALID)
			_, err = rs.Create(ctx, queuetest.NewIDs(1)[0], 1, json.RawMessage("{bad"))
			wantCode(t, err, redstate.EINVALID)
			missing := queuetest.NewIDs(1)[0]
			_, err = rs.Get(ctx, missing)
			wantCode(t, err, redstate.ENOTFOUND)
			_, err = rs.SetResult(ctx, missing, result)
			wantCode(t, err, redstate.ENOTFOUND)
			_, err = rs.SetFailed(ctx, missing, "x")
			wantCode(t, err, redstate.ENOTFOUND)
			_, err = rs.ResetForRegeneration(ctx, missing)
			wantCode(t, err, redstate.ENOTFOUND)
			_, err = rs.ListGeneratingOlderThan(ctx, -1)
			wantCode(t, err, redstate.EINVALID)
		}},
		{Name: "Lifecycle", Run: func(t *testing.T) {
			rs := newRecords(t)
			id := queuetest.NewIDs(1)[0]
			r, err := rs.Submit(ctx, id, answers)
			if err != nil || r.Status != report.StatusGenerating {
				t.Fatalf("Submit = %+v, %v", r, err)
			}
			if r, err = rs.SetResult(ctx, id, result); err != nil || r.Status != report.StatusDone || string(r.Result) != string(result) {
				t.Fatalf("SetResult = %+v, %v", r, err)
			}
			if r = get(t, rs, id); r.StatusText != "已完成" || string(r.Result) != string(result) {
				t.Fatalf("after SetResult Get = %+v", r)
			}
			if r, err = rs.SetFailed(ctx, id, "boom"); err != nil || r.Status != report.StatusFailed || r.Error != "boom" || r.Result != nil {
				t.Fatalf("SetFailed = %+v, %v", r, err)
			}
			if r = get(t, rs, id); r.StatusText != "生成失败" {
				t.Fatalf("StatusText = %q", r.StatusText)
			}
			if r, err = rs.ResetForRegeneration(ctx, id); err != nil || r.Status != report.StatusGenerating || r.Error != "" || r.Result != nil {
				t.Fatalf("ResetForRegeneration = %+v, %v", r, err)
			}
			if r, err = rs.Submit(ctx, id, answers); !redstate.IsCode(err, redstate.ECONFLICT) || report.BusinessCode(err) != report.CodeInvalidOperation {
				t.Fatalf("Submit over a record in status 3 = %+v, %v; want 2005 (ECONFLICT)", r, err)
			}
		}},
		{Name: "SubmitOnlyFromStatus1Or2", Run: func(t *testing.T) {
			rs := newRecords(t)
			for _, status := range []int{report.StatusPending, report.StatusInProgress} {
				id := create(t, rs, status)
				if r, err := rs.Submit(t.Context(), id, json.RawMessage(`{"q":2}`)); err != nil || r.Status != report.StatusGenerating {
					t.Fatalf("Submit from status %d = %+v, %v", status, r, err)
				}
			}
			for _, status := range []int{report.StatusGenerating, report.StatusDone, report.StatusFailed} {
				id := create(t, rs, status)
				before := get(t, rs, id)
				_, err := rs.Submit(t.Context(), id, json.RawMessage(`{"q":2}`))
				if !redstate.IsCode(err, redstate.ECONFLICT) || report.BusinessCode(err) != report.CodeInvalidOperation {
					t.Fatalf("Submit from status %d = %v; want 2005 (ECONFLICT)", status, err)
				}
				if after := get(t, rs, id); after.Status != before.Status || string(after.Answers) != string(before.Answers) {
					t.Fatalf("a refused Submit changed the record: %+v -> %+v", before, after)
				}
			}
		}},
		{Name: "ResetGuardedByStatus", Run: func(t *testing.T) {
			rs := newRecords(t)
			for _, status := range []int{report.StatusPending, report.StatusInProgress, report.StatusDone} {
				id := create(t, rs, status)
				before := get(t, rs, id)
				_, err := rs.ResetForRegeneration(ctx, id)
				wantCode(t, err, redstate.ECONFLICT)
				if after := get(t, rs, id); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
					t.Fatalf("rejected reset changed the record: %+v → %+v", before, after)
				}
			}
		}},
		{Name: "ListGenerating", Run: func(t *testing.T) {
			rs := newRecords(t)
			gen := create(t, rs, report.StatusGenerating)
			done := create(t, rs, report.StatusDone)
			ids, err := rs.ListGeneratingOlderThan(ctx, 0)
			if err != nil || !slices.Contains(ids, gen) || slices.Contains(ids, done) || !slices.IsSorted(ids) {
				t.Fatalf("ListGeneratingOlderThan(0) = %v, %v", ids, err)
			}
			ids, err = rs.ListGeneratingOlderThan(ctx, 1<<62)
			if err != nil || slices.Contains(ids, gen) {
				t.Fatalf("ListGeneratingOlderThan(huge) = %v, %v", ids, err)
			}
		}},
		{Name: "ReturnsCopies", Run: func(t *testing.T) {
			rs := newRecords(t)
			id := create(t, rs, report.StatusGenerating)
			r := get(t, rs, id)
			r.Answers[0] = 'X'
			if r2 := get(t, rs, id); string(r2.Answers) != string(answers) {
				t.Fatal("a returned record aliases the stored one")
			}
		}},
	}})
}
