package redisrecords_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/redisrecords"
	"github.com/redstate/redstate/report/reporttest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// uniqueNS returns a fresh namespace, so that stores sharing a server never see each other.
func uniqueNS() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:]) + "-"
}

func mustBroker(t *testing.T, c redis.UniversalClient, opts redisqueue.Options) *redisqueue.Broker {
	t.Helper()
	b, err := redisqueue.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRecords(t *testing.T, c redis.UniversalClient, opts redisrecords.Options) *redisrecords.Store {
	t.Helper()
	rs, err := redisrecords.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// backends returns constructors for one topology's client: every call gets its own namespace.
func backends(c redis.UniversalClient) (queuetest.NewBroker, reporttest.NewRecordStore) {
	nb := func(t *testing.T) queue.Broker {
		return mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
	}
	nr := func(t *testing.T) report.RecordStore {
		return mustRecords(t, c, redisrecords.Options{Namespace: uniqueNS()})
	}
	return nb, nr
}

func TestRecordStoreSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			_, nr := backends(topo.Client(t))
			reporttest.RunRecordStoreSuite(t, nr)
		})
	}
}

func TestReportWorkerSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			nb, nr := backends(topo.Client(t))
			reporttest.RunWorkerSuite(t, nb, nr)
		})
	}
}

func TestProperties(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			nb, nr := backends(topo.Client(t))
			reporttest.RunProperties(t, nb, nr)
		})
	}
}

// TestKeys_SeedNames checks the legacy application's key names on standalone: the report queue is
// "report:queue" (dead letters "report:queue:dead"), a record is "report:record:<id>" and the
// generating index "report:records:generating"; on Cluster a record and the index share a slot.
func TestKeys_SeedNames(t *testing.T) {
	c := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	if k := queue.NewKeys(redstate.Prefix("", report.DefaultQueue), false); k.Pending != "report:queue" || k.Dead != "report:queue:dead" {
		t.Fatalf("report queue keys = %+v", k)
	}
	ns := uniqueNS()
	rs := mustRecords(t, c, redisrecords.Options{Namespace: ns})
	if _, err := rs.Submit(ctx, 12345, nil); err != nil {
		t.Fatal(err)
	}
	if got := c.HGet(ctx, ns+"report:record:12345", "status").Val(); got != "3" {
		t.Fatalf("record status field = %q", got)
	}
	if got := c.ZScore(ctx, ns+"report:records:generating", "12345").Val(); got <= 0 {
		t.Fatalf("generating index score = %v", got)
	}
	if ttl := c.PTTL(ctx, ns+"report:record:12345").Val(); ttl <= 0 || ttl > report.DefaultRecordRetention {
		t.Fatalf("record PTTL = %v", ttl)
	}
	cl := redistest.SharedCluster(t).Client(t)
	for _, ns := range []string{"", "prod-"} {
		rk := report.NewKeys(redstate.Prefix(ns, ""), true)
		keys := []string{rk.Record(1), rk.Record(12345), rk.Generating()}
		slot := cl.ClusterKeySlot(ctx, keys[0]).Val()
		for _, key := range keys[1:] {
			if got := cl.ClusterKeySlot(ctx, key).Val(); got != slot {
				t.Fatalf("CLUSTER KEYSLOT %s = %d, want %d (slot of %s)", key, got, slot, keys[0])
			}
		}
	}
}

// TestLegacyLPUSHGenerated: a message the legacy application's producer (or redis-cli) LPUSHed onto
// report:queue before the upgrade, in the legacy application's format, is consumed by a report
// worker and its report generated.
func TestLegacyLPUSHGenerated(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := topo.Client(t)
			ctx := context.Background()
			ns := uniqueNS()
			b := mustBroker(t, c, redisqueue.Options{Namespace: ns})
			rs := mustRecords(t, c, redisrecords.Options{Namespace: ns})
			id := queuetest.NewIDs(1)[0]
			if _, err := rs.Submit(ctx, id, []byte(`{"q":3}`)); err != nil {
				t.Fatal(err)
			}
			legacy := `{"RecordId":` + strconv.FormatInt(id, 10) + `,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`
			cluster := topo.Cluster
			if err := c.LPush(ctx, queue.NewKeys(redstate.Prefix(ns, report.DefaultQueue), cluster).Pending, legacy).Err(); err != nil {
				t.Fatal(err)
			}
			cfg := reporttest.WorkerConfig(report.DefaultQueue, rs)
			w, err := queue.NewWorker(b, (&report.Generator{Records: rs, Delay: -1}).Handler(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = w.Run(wctx) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				r, err := rs.Get(ctx, id)
				if err == nil && r.Status == report.StatusDone {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("legacy job not generated: %+v, %v", r, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestNew_RejectsBadNamespace(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := redisrecords.New(c, redisrecords.Options{Namespace: "a b"}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("bad record namespace: %v", err)
	}
}

// TestRecords_RetentionExpiresAndSweepsIndex: a record expires Retention after its last write
// (PEXPIRE), and its generating-index entry is dropped by ListGeneratingOlderThan.
func TestRecords_RetentionExpiresAndSweepsIndex(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := topo.Client(t)
			ns := uniqueNS()
			rs := mustRecords(t, c, redisrecords.Options{Namespace: ns, Retention: 150 * time.Millisecond})
			ctx := context.Background()
			id := queuetest.NewIDs(1)[0]
			if _, err := rs.Submit(ctx, id, []byte(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			if ids, err := rs.ListGeneratingOlderThan(ctx, 0); err != nil || len(ids) != 1 || ids[0] != id {
				t.Fatalf("ListGeneratingOlderThan = %v, %v", ids, err)
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := rs.Get(ctx, id); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("Get after retention = %v, want ENOTFOUND", err)
			}
			if ids, err := rs.ListGeneratingOlderThan(ctx, 0); err != nil || len(ids) != 0 {
				t.Fatalf("ListGeneratingOlderThan after expiry = %v, %v", ids, err)
			}
			cluster := topo.Cluster
			if n := c.ZCard(ctx, report.NewKeys(redstate.Prefix(ns, ""), cluster).Generating()).Val(); n != 0 {
				t.Fatalf("generating index still holds %d entries", n)
			}
		})
	}
}

// TestRedisDown_Unavailable: with Redis killed the store's calls fail with EUNAVAILABLE; after
// a restart (AOF, fsync always) the record is back.
func TestRedisDown_Unavailable(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	rs := mustRecords(t, c, redisrecords.Options{})
	ctx := context.Background()
	if _, err := rs.Submit(ctx, 7, nil); err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	_, getErr := rs.Get(ctx, 7)
	_, resetErr := rs.ResetForRegeneration(ctx, 7)
	for name, err := range map[string]error{"Get": getErr, "Reset": resetErr} {
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Errorf("%s with Redis down: err = %v, want EUNAVAILABLE", name, err)
		}
	}
	srv.Restart(t)
	if r, err := rs.Get(ctx, 7); err != nil || r.Status != report.StatusGenerating {
		t.Fatalf("Get after restart = %+v, %v", r, err)
	}
}

// TestACLRefusal_IsUnavailable: a Redis ACL that forbids the store's writes makes a submit
// EUNAVAILABLE (HTTP 503), never EINTERNAL.
func TestACLRefusal_IsUnavailable(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := context.Background()
	if err := srv.Client(t).Do(ctx, "ACL", "SETUSER", "reader", "on", ">reader-password-1234", "~*", "+@read", "+ping", "+hello", "+client").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "reader", Password: "reader-password-1234", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	_, err := mustRecords(t, c, redisrecords.Options{}).Submit(ctx, 1, []byte(`{"q":1}`))
	if code := redstate.ErrorCode(err); code != redstate.EUNAVAILABLE {
		t.Fatalf("submit under a read-only ACL: code %q (%v), want EUNAVAILABLE", code, err)
	}
}
