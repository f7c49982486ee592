package kafkasource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/memindex"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redistest"
)

// TestMain runs the tests, or, in a process a test started as a group member, that member
// (runMember).
func TestMain(m *testing.M) {
	if spec := os.Getenv(memberEnv); spec != "" {
		runMember(spec)
		return
	}
	redistest.Main(m)
}

// waitTimeout bounds every wait: generous, for a loaded 2-core machine.
const waitTimeout = 90 * time.Second

// env is one test's Kafka cluster, index on the shared Redis and producer.
type env struct {
	t       *testing.T
	brokers []string
	cluster *kfake.Cluster
	ix      *index.Indexer
	store   index.Store
	redis   *redis.Client
	prefix  string
	prod    *kgo.Client
	// next is the next offset of each topic partition, as produced.
	mu   sync.Mutex
	next map[kafkasource.TopicPartition]int64
}

// newEnv starts a kfake cluster with topics of partitions each and an index of the seed table.
func newEnv(t *testing.T, partitions int32, topics ...string) *env {
	t.Helper()
	return newEnvCluster(t, nil, partitions, topics...)
}

// newEnvCluster is newEnv with further options of the cluster.
func newEnvCluster(t *testing.T, opts []kfake.Opt, partitions int32, topics ...string) *env {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := newEnvOn(t, c.ListenAddrs())
	e.cluster = c
	return e
}

// newEnvOn is newEnv on existing brokers.
func newEnvOn(t *testing.T, brokers []string) *env {
	t.Helper()
	return newEnvWith(t, brokers, redistest.SharedStandalone(t).Client(t))
}

// newEnvWith is newEnvOn with the index on client and the producer's further options.
func newEnvWith(t *testing.T, brokers []string, client *redis.Client, prodOpts ...kgo.Opt) *env {
	t.Helper()
	prefix := indextest.UniquePrefix()
	store := redisindex.New(client)
	ix, err := index.New(store, []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, prodOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &env{t: t, brokers: brokers, ix: ix, store: store, redis: client, prefix: prefix, prod: prod, next: map[kafkasource.TopicPartition]int64{}}
}

// produce writes values (nil: a tombstone) to one partition, in order, and returns the first
// one's offset.
func (e *env) produce(topic string, partition int32, values ...[]byte) int64 {
	e.t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: v}
	}
	res := e.prod.ProduceSync(context.Background(), recs...)
	if err := res.FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	tp := kafkasource.TopicPartition{Topic: topic, Partition: partition}
	for _, r := range res {
		e.next[tp] = max(e.next[tp], r.Record.Offset+1)
	}
	return res[0].Record.Offset
}

// source returns a source on the env's brokers with test timings, and overrides from opts.
func (e *env) source(group, format string, topics []string, extra ...kgo.Opt) *kafkasource.Source {
	e.t.Helper()
	return e.sourceWith(group, format, topics, func(*kafkasource.Options) {}, extra...)
}

// sourceWith is source with its options changed by set before New.
func (e *env) sourceWith(group, format string, topics []string, set func(*kafkasource.Options), extra ...kgo.Opt) *kafkasource.Source {
	e.t.Helper()
	opts := kafkasource.Options{Brokers: e.brokers, Topics: topics, Group: group, Format: format,
		CommitInterval: 200 * time.Millisecond, ErrorDelay: 100 * time.Millisecond,
		ClientOptions: append([]kgo.Opt{kgo.HeartbeatInterval(200 * time.Millisecond), kgo.FetchMaxWait(500 * time.Millisecond)}, extra...)}
	set(&opts)
	src, err := kafkasource.New(e.ix, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return src
}

// run runs src until the returned stop is called (or the test ends).
func run(t *testing.T, src *kafkasource.Source) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(waitTimeout):
				t.Errorf("Run did not return within %s of its context's end", waitTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds or waitTimeout passes; then the test fails with what cond
// last said.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %s", what, waitTimeout, state)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// state is a row's truth: nil when deleted.
type state struct{ las, cat int }

// truth is what the table holds at the end, by id.
type truth map[int]*state

// rowJSON is a Canal data element of the seed table (yn "0": logically deleted).
func rowJSON(id int, s state, yn string) string {
	return fmt.Sprintf(`{"id":"%d","provinceId":"1","cityId":"72","lastAddrId":"%d","categoryId":"%d","brandId":"9","name":"n%d","yn":%q}`,
		id, s.las, s.cat, id, yn)
}

// canal is a Canal flat message of rows (already rowJSON) of batch id at es.
func canal(typ string, es, id int64, rows ...string) []byte {
	return fmt.Appendf(nil, `{"data":[%s],"database":"db1","table":"table1","type":%q,"es":%d,"ts":%d,"id":%d,"isDdl":false,"pkNames":["id"]}`,
		strings.Join(rows, ","), typ, es, es+7, id)
}

// textRow is the change row of a live state, as Canal gives it.
func textRow(id int, s state) map[string]*string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(rowJSON(id, s, "1")), &m)
	return index.TextRow(m)
}

// dumpWithoutVersions is every key of the table but the version (fil-) keys, which hold
// source-specific versions and times.
func dumpWithoutVersions(t *testing.T, store index.Store, ix *index.Indexer) map[string]string {
	t.Helper()
	keys, _ := ix.Keys("db1", "table1")
	d, err := store.Dump(context.Background(), keys.Pattern())
	if err != nil {
		t.Fatal(err)
	}
	maps.DeleteFunc(d, func(k, _ string) bool { return strings.Contains(k, ":fil-") })
	return d
}

// expected is the index of tr: tr's live rows applied to a memory index under the same prefix.
func (e *env) expected(tr truth) map[string]string {
	e.t.Helper()
	mem := memindex.New()
	ix, err := index.New(mem, []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: e.prefix})
	if err != nil {
		e.t.Fatal(err)
	}
	var changes []index.Change
	for id, s := range tr {
		if s != nil {
			changes = append(changes, index.Change{DB: "db1", Table: "table1", Op: index.OpUpsert, Row: textRow(id, *s), Version: index.LogVersion(1, 0)})
		}
	}
	if _, err := ix.Apply(context.Background(), changes); err != nil {
		e.t.Fatal(err)
	}
	return dumpWithoutVersions(e.t, mem, ix)
}

// waitTruth waits until every index entry equals tr's, and checks that every row of tr has
// its version key.
func (e *env) waitTruth(tr truth) {
	e.t.Helper()
	want := e.expected(tr)
	waitFor(e.t, "index equal to the truth", func() (bool, string) {
		got := dumpWithoutVersions(e.t, e.store, e.ix)
		if maps.Equal(got, want) {
			return true, ""
		}
		return false, diff(got, want)
	})
	keys, _ := e.ix.Keys("db1", "table1")
	for id := range tr {
		if n, err := e.store.Dump(context.Background(), keys.Version(fmt.Sprint(id))); err != nil || len(n) != 1 {
			e.t.Errorf("row %d has no version key (%v)", id, err)
		}
	}
}

// diff describes how got differs from want (a few keys).
func diff(got, want map[string]string) string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			out = append(out, "missing "+k)
		} else if g != w {
			out = append(out, fmt.Sprintf("%s = %q, want %q", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "extra "+k)
		}
	}
	slices.Sort(out)
	if len(out) > 6 {
		out = append(out[:6], fmt.Sprintf("… %d more", len(out)-6))
	}
	return strings.Join(out, "; ")
}

// admin returns a plain client of the env's brokers, closed with the test.
func (e *env) admin() *kgo.Client {
	e.t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(adm.Close)
	return adm
}

// tpOf names a partition.
func tpOf(topic string, p int32) kafkasource.TopicPartition {
	return kafkasource.TopicPartition{Topic: topic, Partition: p}
}

// waitCommitted waits until group has committed every produced offset.
func (e *env) waitCommitted(group string) {
	e.t.Helper()
	adm := e.admin()
	e.mu.Lock()
	want := maps.Clone(e.next)
	e.mu.Unlock()
	waitFor(e.t, "every partition committed", func() (bool, string) {
		got := committed(e.t, adm, group)
		for tp, n := range want {
			if got[tp] != n {
				return false, fmt.Sprintf("committed %v, want %v", got, want)
			}
		}
		return true, ""
	})
}
