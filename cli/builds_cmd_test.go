package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

func TestBuildsCommands_GetListDeleteAgainstRedis(t *testing.T) {
	srv := redistest.StartStandalone(t)
	store, err := redisstore.New(srv.Client(t), redisstore.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ids := []string{storetest.NewBuildID(), storetest.NewBuildID(), storetest.NewBuildID()}
	for i, id := range ids {
		project := "a*"
		if i == 2 {
			project = "other"
		}
		if _, err := store.Save(t.Context(), storetest.SampleDoc(id, project), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	out, err := run(t, "builds", "list", "--json", "--redis", srv.URL)
	if err != nil || strings.Count(out, "\n") != 3 || !strings.HasPrefix(out, "{") {
		t.Fatalf("builds list --json = %v, %d lines:\n%s", err, strings.Count(out, "\n"), out)
	}
	out, err = run(t, "builds", "list", "--redis", srv.URL)
	if err != nil || strings.Count(out, "\n") != 4 || !strings.HasPrefix(out, "BUILD") || !strings.Contains(out, ids[0]) {
		t.Fatalf("builds list (table) = %v:\n%s", err, out)
	}
	out, err = run(t, "builds", "list", "--json", "--project", "a*", "--redis", srv.URL)
	if err != nil || strings.Count(out, "\n") != 2 || strings.Contains(out, ids[2]) {
		t.Fatalf("builds list --project a* = %v:\n%s", err, out)
	}
	out, err = run(t, "builds", "get", strings.ToUpper(ids[0]), "--redis", srv.URL)
	if err != nil || !strings.Contains(out, `"buildId":"`+ids[0]+`"`) {
		t.Fatalf("builds get = %v:\n%s", err, out)
	}
	if _, err := run(t, "builds", "delete", ids[0], "--redis", srv.URL); err == nil || !strings.Contains(err.Error(), "not confirmed: this would delete build "+ids[0]) {
		t.Fatalf("builds delete without --yes = %v", err)
	}
	if _, err := run(t, "builds", "get", ids[0], "--redis", srv.URL); err != nil {
		t.Fatalf("builds delete without --yes deleted the build: %v", err)
	}
	if _, err := run(t, "builds", "delete", ids[0], "--yes", "--redis", srv.URL); err != nil {
		t.Fatalf("builds delete: %v", err)
	}
	if _, err := run(t, "builds", "get", ids[0], "--redis", srv.URL); err == nil || !strings.Contains(err.Error(), "not") {
		t.Fatalf("builds get after delete = %v, want not found", err)
	}
	if _, err := run(t, "builds", "get", "not-a-uuid", "--redis", srv.URL); err == nil {
		t.Fatal("builds get accepted an invalid id")
	}
}

func TestBuildsCommands_RequireRedis(t *testing.T) {
	t.Setenv("REDSTATE_REDIS_URL", "")
	if _, err := run(t, "builds", "list"); err == nil || !strings.Contains(err.Error(), "no Redis configured") {
		t.Fatalf("builds list without Redis = %v", err)
	}
}
