package buildstatus_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/storetest"
)

type recordingObserver struct {
	mu  sync.Mutex
	ops []string
}

func (r *recordingObserver) ObserveOp(block, op, backend string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, block+"/"+op+"/"+backend+"/"+redstate.ErrorCode(err))
}

// downStore fails every Get with EUNAVAILABLE.
type downStore struct{ buildstatus.Store }

func (downStore) Get(context.Context, string) (*buildstatus.Build, error) {
	return nil, redstate.Errorf(redstate.EUNAVAILABLE, "redis down")
}

func TestInstrument_TimesEveryCallAndLogsLikeTheSeed(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	obs := &recordingObserver{}
	s := buildstatus.Instrument(mem, "memory", obs, log)
	ctx := context.Background()

	doc := storetest.SampleDoc("", "")
	b, err := s.Save(ctx, doc, buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, doc.BuildID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "6ba7b810-9dad-11d1-80b4-00c04fd430c8"); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatal(err)
	}
	down := buildstatus.Instrument(downStore{mem}, "redis", obs, log)
	if _, err := down.Get(ctx, doc.BuildID); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatal(err)
	}

	want := []string{
		"buildstatus/save/memory/", "buildstatus/get/memory/",
		"buildstatus/get/memory/not_found", "buildstatus/get/redis/unavailable",
	}
	if strings.Join(obs.ops, " ") != strings.Join(want, " ") {
		t.Errorf("observed %v, want %v", obs.ops, want)
	}
	out := logs.String()
	for _, w := range []string{
		"level=DEBUG msg=\"saved build status\" buildId=" + doc.BuildID + " size=" + itoa(len(b.JSON)),
		"level=DEBUG msg=\"read build status\" buildId=" + doc.BuildID + " found=true",
		"found=false",
		"level=ERROR msg=\"build status store operation failed\" operation=get buildId=" + doc.BuildID,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("log lacks %q:\n%s", w, out)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestInstrument_OutageLogsOnceNotPerCall: 100 failed calls during an outage log one ERROR
// (the seed's line, for the first), not 100.
func TestInstrument_OutageLogsOnceNotPerCall(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	down := buildstatus.Instrument(downStore{mem}, "redis", nil, log)
	for range 100 {
		_, _ = down.Get(context.Background(), "550e8400-e29b-41d4-a716-446655440000")
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("100 failures during one outage logged %d ERROR lines, want 1:\n%s", n, logs.String())
	}
}
