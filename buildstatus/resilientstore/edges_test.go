package resilientstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// ctxPrimary answers like redisstore when the caller's context has ended: EUNAVAILABLE
// wrapping the context's error (rediserr.Map), without touching the store.
type ctxPrimary struct{ buildstatus.Store }

func (p ctxPrimary) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if err := ctx.Err(); err != nil {
		return nil, redstate.Wrap(redstate.EUNAVAILABLE, err, "saving build: Redis is unavailable")
	}
	return p.Store.Save(ctx, doc, opts)
}

func (p ctxPrimary) Delete(ctx context.Context, id, ifMatch string) error {
	if err := ctx.Err(); err != nil {
		return redstate.Wrap(redstate.EUNAVAILABLE, err, "deleting build: Redis is unavailable")
	}
	return p.Store.Delete(ctx, id, ifMatch)
}

// TestFallback_CallerCanceledIsNotAnOutage: a write whose caller gave up did not meet an
// unavailable Redis; it must not be accepted into the fallback as a pending write (that
// nobody is told about and that later overrides Redis by newer-wins).
func TestFallback_CallerCanceledIsNotAnOutage(t *testing.T) {
	raw := memstore.New(memstore.Options{TTL: time.Hour})
	fb := memstore.New(memstore.Options{TTL: time.Hour})
	s, err := New(ctxPrimary{raw}, fb, testConfig(resilience.PolicyFallback, time.Hour), metrics.New(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = fb.Close(); _ = raw.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	id := newID()
	if _, err := s.Save(ctx, doc(id, nil), buildstatus.SaveOptions{}); err == nil {
		t.Fatal("Save with a canceled context succeeded")
	}
	if err := s.Delete(ctx, newID(), ""); err == nil {
		t.Fatal("Delete with a canceled context succeeded")
	}
	if n := s.Pending(); n != 0 {
		t.Fatalf("%d pending writes after canceled calls, want 0", n)
	}
}

// TestFallback_DeleteRejectsNonCanonicalID: a Store returns EINVALID for a non-canonical id
// and never turns it into a key. While Redis is unreachable (or the breaker is open, so the
// primary never sees the id) an uppercase id must not become a tombstone: none could ever be
// written back (the primary rejects it), so it would stay pending, and journaled, forever.
func TestFallback_DeleteRejectsNonCanonicalID(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	f.flaky.down.Store(true)
	err := f.s.Delete(t.Context(), strings.ToUpper(newID()), "")
	if !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("Delete of a non-canonical id while down = %v, want invalid", err)
	}
	if n := f.s.Pending(); n != 0 {
		t.Fatalf("%d pending writes, want 0", n)
	}
}
