package statetest

import (
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// NewTenantIndex returns an empty, isolated TenantIndex whose entries live ttl.
type NewTenantIndex func(t *testing.T, ttl time.Duration) executor.TenantIndex

// RunTenantIndexSuite checks the executor.TenantIndex contract.
func RunTenantIndexSuite(t *testing.T, newIndex NewTenantIndex, _ Features) {
	index := func(t *testing.T) executor.TenantIndex { return newIndex(t, time.Hour) }
	runAll(t, []namedTest{
		{"SetGetReplace", func(t *testing.T) {
			x, ctx, tenant := index(t), t.Context(), newID("tenant")
			_, err := x.Get(ctx, tenant)
			wantCode(t, err, redstate.ENOTFOUND, "Get missing")
			must(t, x.Set(ctx, tenant, "task-1"), "Set")
			must(t, x.Set(ctx, tenant, "task-2"), "Set again")
			got, err := x.Get(ctx, tenant)
			must(t, err, "Get")
			if got != "task-2" {
				t.Fatalf("Get = %q, want task-2", got)
			}
		}},
		{"DeleteOnlyIfPointing", func(t *testing.T) {
			x, ctx, tenant := index(t), t.Context(), newID("tenant")
			must(t, x.Set(ctx, tenant, "task-new"), "Set")
			ok, err := x.Delete(ctx, tenant, "task-old")
			must(t, err, "Delete other")
			if ok {
				t.Fatal("Delete removed another task's entry")
			}
			if got, _ := x.Get(ctx, tenant); got != "task-new" {
				t.Fatalf("entry = %q after foreign delete", got)
			}
			ok, err = x.Delete(ctx, tenant, "task-new")
			must(t, err, "Delete")
			if !ok {
				t.Fatal("Delete of the current task reported false")
			}
			_, err = x.Get(ctx, tenant)
			wantCode(t, err, redstate.ENOTFOUND, "Get after Delete")
			if ok, _ = x.Delete(ctx, tenant, "task-new"); ok {
				t.Fatal("second Delete reported true")
			}
		}},
		{"Invalid", func(t *testing.T) {
			x, ctx := index(t), t.Context()
			for _, bad := range badIDs {
				wantCode(t, x.Set(ctx, bad, "task"), redstate.EINVALID, "Set tenant "+bad)
				wantCode(t, x.Set(ctx, "tenant", bad), redstate.EINVALID, "Set task "+bad)
				_, err := x.Get(ctx, bad)
				wantCode(t, err, redstate.EINVALID, "Get "+bad)
				_, err = x.Delete(ctx, bad, "task")
				wantCode(t, err, redstate.EINVALID, "Delete "+bad)
			}
		}},
		{"TTL", func(t *testing.T) {
			x, ctx, tenant := newIndex(t, shortTTL), t.Context(), newID("tenant")
			must(t, x.Set(ctx, tenant, "task-1"), "Set")
			eventually(t, "index expiry", func() bool {
				_, err := x.Get(ctx, tenant)
				return redstate.IsCode(err, redstate.ENOTFOUND)
			})
		}},
	})
}
