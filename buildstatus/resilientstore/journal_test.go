package resilientstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// journalConfig is a fallback configuration with a journal at path.
func journalConfig(path string, writeBack time.Duration) resilience.Options {
	cfg := testConfig(resilience.PolicyFallback, writeBack)
	cfg.Journal = path
	return cfg
}

// openStore starts a resilient store over primary with a fresh memory fallback, as a new
// process would. Its cleanup closes it (a no-op after crash).
func openStore(t *testing.T, primary buildstatus.Store, cfg resilience.Options, log *slog.Logger) *Store {
	t.Helper()
	if log == nil {
		log = quietLog()
	}
	fb := memstore.New(memstore.Options{TTL: time.Hour})
	s, err := New(primary, fb, cfg, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		_ = fb.Close()
	})
	return s
}

// crash ends s the way SIGKILL would: no final write-back, no fsync, the journal's file and
// lock simply released (the kernel does that for a killed process).
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		if s.j == nil {
			return
		}
		s.j.mu.Lock()
		_ = s.j.f.Close()
		s.j.f = nil
		s.j.mu.Unlock()
		if err := s.j.unlock(); err != nil {
			t.Error(err)
		}
	})
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestJournal_CrashDuringOutageRecoversAndWritesBack: fallback writes (save, platform update,
// tombstone) made while Redis is down survive a crash of the process; a new store on the same
// journal serves them as pending and writes them back when Redis returns, then empties the
// journal.
func TestJournal_CrashDuringOutageRecoversAndWritesBack(t *testing.T) {
	for _, how := range []string{"killed", "closed with redis down"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			raw := memstore.New(memstore.Options{TTL: time.Hour})
			t.Cleanup(func() { _ = raw.Close() })
			fl := &flaky{Store: raw}
			path := filepath.Join(t.TempDir(), "state", "fallback.journal") // directory created by New
			cfg := journalConfig(path, time.Hour)                           // no write-back before the crash

			gone := newID()
			old := time.Now().Add(-time.Hour)
			if _, err := raw.Save(ctx, doc(gone, &old), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			s1 := openStore(t, fl, cfg, nil)
			fl.down.Store(true)
			a, b := newID(), newID()
			now := time.Now()
			ackA, err := s1.Save(ctx, doc(a, &now), buildstatus.SaveOptions{})
			if err != nil {
				t.Fatalf("fallback Save = %v", err)
			}
			if _, err := s1.Save(ctx, doc(b, &now), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			ackB, err := s1.UpdatePlatform(ctx, b, &buildstatus.PlatformResult{Platform: "h5", Status: "SUCCESS"}, "")
			if err != nil {
				t.Fatalf("UpdatePlatform of a pending build = %v", err)
			}
			if err := s1.Delete(ctx, gone, ""); err != nil {
				t.Fatalf("fallback Delete = %v", err)
			}
			if n := s1.Pending(); n != 3 {
				t.Fatalf("Pending = %d, want 3", n)
			}
			if how == "killed" {
				crash(t, s1)
			} else if err := s1.Close(); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if fileSize(t, path) == 0 {
				t.Fatal("journal is empty after the crash")
			}

			logs := &logBuffer{}
			cfg.WriteBackInterval = 5 * time.Millisecond
			s2 := openStore(t, fl, cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if n := s2.Pending(); n != 3 {
				t.Fatalf("recovered Pending = %d, want 3", n)
			}
			if !strings.Contains(logs.String(), "recovered=3") {
				t.Errorf("no Info log of the recovered count:\n%s", logs)
			}
			// Redis is still down: the recovered writes are served from memory.
			if got, err := s2.Get(ctx, a); err != nil || got.ETag() != ackA.ETag() {
				t.Fatalf("Get(a) after recovery = %v, %v; want the acknowledged value", got, err)
			}
			if got, err := s2.Get(ctx, b); err != nil || got.ETag() != ackB.ETag() {
				t.Fatalf("Get(b) after recovery = %v, %v; want the acknowledged platform update", got, err)
			}
			if _, err := s2.Get(ctx, gone); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("Get of a recovered tombstone = %v, want ENOTFOUND", err)
			}
			if _, err := raw.Get(ctx, gone); err != nil {
				t.Fatalf("Redis lost the deleted build before write-back: %v", err)
			}

			fl.down.Store(false)
			eventually(t, "write-back of the recovered writes", func() bool { return s2.Pending() == 0 })
			for id, want := range map[string]*buildstatus.Build{a: ackA, b: ackB} {
				got, err := raw.Get(ctx, id)
				if err != nil || got.ETag() != want.ETag() {
					t.Fatalf("Redis holds %v (%v) for %s, want the acknowledged %s", got, err, id, want.JSON)
				}
			}
			if _, err := raw.Get(ctx, gone); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("recovered tombstone not written back: Get = %v", err)
			}
			if n := fileSize(t, path); n != 0 {
				t.Fatalf("journal holds %d bytes after everything was written back, want 0", n)
			}
		})
	}
}

// TestJournal_TornTailIgnored: a record cut short or corrupted by a crash mid-append is dropped
// (and truncated away) while every record before it is recovered.
func TestJournal_TornTailIgnored(t *testing.T) {
	full, err := encodeRecord(journalRecord{Op: opDelete, ID: newID(), DeletedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(full)
	corrupt[len(corrupt)-2] ^= 0xff
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"partial header", full[:5]},
		{"partial payload", full[:len(full)-3]},
		{"bad checksum", corrupt},
		{"garbage", []byte("\xff\xff\xff\xffnot a record at all")},
		{"zero fill", make([]byte, 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			raw := memstore.New(memstore.Options{TTL: time.Hour})
			t.Cleanup(func() { _ = raw.Close() })
			fl := &flaky{Store: raw}
			fl.down.Store(true)
			path := filepath.Join(t.TempDir(), "fallback.journal")
			cfg := journalConfig(path, time.Hour)
			s1 := openStore(t, fl, cfg, nil)
			ids := []string{newID(), newID()}
			acked := map[string]string{}
			for _, id := range ids {
				b, err := s1.Save(ctx, doc(id, nil), buildstatus.SaveOptions{})
				if err != nil {
					t.Fatal(err)
				}
				acked[id] = b.ETag()
			}
			crash(t, s1)
			good := fileSize(t, path)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tc.tail); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()

			logs := &logBuffer{}
			s2 := openStore(t, fl, cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if n := s2.Pending(); n != len(ids) {
				t.Fatalf("Pending after a torn tail = %d, want %d", n, len(ids))
			}
			for _, id := range ids {
				if b, err := s2.Get(ctx, id); err != nil || b.ETag() != acked[id] {
					t.Fatalf("Get(%s) = %v, %v; want the record before the torn tail", id, b, err)
				}
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "torn") {
				t.Errorf("no Warn about the torn tail:\n%s", logs)
			}
			if n := fileSize(t, path); n != good {
				t.Fatalf("journal is %d bytes after replay, want the torn tail truncated to %d", n, good)
			}
			// New appends land after the good records and are replayed too.
			c := newID()
			if _, err := s2.Save(ctx, doc(c, nil), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			crash(t, s2)
			s3 := openStore(t, fl, cfg, nil)
			if n := s3.Pending(); n != 3 {
				t.Fatalf("Pending after appending past a truncated tail = %d, want 3", n)
			}
		})
	}
}

// TestJournal_TruncatedOnceWrittenBack: the journal is emptied as soon as nothing is pending,
// and a write after that starts a fresh journal.
func TestJournal_TruncatedOnceWrittenBack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	path := filepath.Join(t.TempDir(), "fallback.journal")
	s := openStore(t, f.flaky, journalConfig(path, 5*time.Millisecond), nil)

	f.flaky.down.Store(true)
	for range 3 {
		if _, err := s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if fileSize(t, path) == 0 {
		t.Fatal("fallback writes were acknowledged but the journal is empty")
	}
	f.flaky.down.Store(false)
	eventually(t, "write-back", func() bool { return s.Pending() == 0 })
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("journal holds %d bytes with nothing pending, want 0", n)
	}

	// A write acknowledged by Redis is not journaled.
	if _, err := s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("a write Redis acknowledged grew the journal to %d bytes", n)
	}
}

// TestJournal_Compaction: many writes to one build during an outage are compacted to one
// record, and the compacted journal recovers the last value.
func TestJournal_Compaction(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	path := filepath.Join(t.TempDir(), "fallback.journal")
	cfg := journalConfig(path, time.Hour)
	s := openStore(t, f.flaky, cfg, nil)
	f.flaky.down.Store(true)
	id := newID()
	var last *buildstatus.Build
	for i := range journalCompactSlack + 10 {
		d := doc(id, nil)
		n := int64(i)
		d.EstimatedTime = &n
		b, err := s.Save(ctx, d, buildstatus.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = b
	}
	if recs, _ := s.j.stats(); recs != journalCompactSlack+10 {
		t.Fatalf("journal records = %d, want one per write", recs)
	}
	s.writeBackRound() // Redis is down: nothing written back, but the journal is compacted
	if recs, _ := s.j.stats(); recs != 1 {
		t.Fatalf("journal records after compaction = %d, want 1", recs)
	}
	crash(t, s)
	s2 := openStore(t, f.flaky, cfg, nil)
	if b, err := s2.Get(ctx, id); err != nil || b.ETag() != last.ETag() {
		t.Fatalf("Get after compaction and crash = %v, %v; want the last write", b, err)
	}
}

// TestJournal_OneProcessPerFile: a second store cannot open a journal that is in use.
func TestJournal_OneProcessPerFile(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	path := filepath.Join(t.TempDir(), "fallback.journal")
	_ = openStore(t, f.flaky, journalConfig(path, time.Hour), nil)
	fb := memstore.New(memstore.Options{TTL: time.Hour})
	defer fb.Close()
	if _, err := New(f.flaky, fb, journalConfig(path, time.Hour), nil, quietLog()); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second New on a journal in use = %v, want a lock error", err)
	}
}

// TestJournal_FailFastRefusesPendingJournal: switching to fail-fast with writes still in the
// journal is an error rather than a silent loss.
func TestJournal_FailFastRefusesPendingJournal(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	path := filepath.Join(t.TempDir(), "fallback.journal")
	s := openStore(t, f.flaky, journalConfig(path, time.Hour), nil)
	f.flaky.down.Store(true)
	if _, err := s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	cfg := journalConfig(path, time.Hour)
	cfg.Policy = resilience.PolicyFailFast
	if _, err := New(f.flaky, nil, cfg, nil, quietLog()); err == nil || !strings.Contains(err.Error(), "never written back") {
		t.Fatalf("fail-fast New over a non-empty journal = %v, want an error", err)
	}
}

// TestJournal_OffWarnsAtStartup: the fallback policy without a journal says it is not durable.
func TestJournal_OffWarnsAtStartup(t *testing.T) {
	logs := &logBuffer{}
	f := newFixture(t, testConfig(resilience.PolicyFailFast, time.Hour))
	_ = openStore(t, f.flaky, testConfig(resilience.PolicyFallback, time.Hour), slog.New(slog.NewTextHandler(logs, nil)))
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "publish.build-status.resilience.journal") {
		t.Fatalf("no startup Warn about the missing journal:\n%s", out)
	}
}
