package benchcmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// commandsProcessed returns the server's total_commands_processed.
func commandsProcessed(t *testing.T, c redis.Cmdable) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_commands_processed in INFO stats:\n%s", info)
	return 0
}

// TestMain stops the database servers sqltest may have started.
func TestMain(m *testing.M) { sqltest.Main(m) }

// run runs redstate-bench with args and returns its stdout.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.Execute()
	return out.String(), err
}

// writeConfig writes a configuration file and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// benchLock is a short `redstate-bench lock` run.
var benchLock = []string{"lock", "--clients", "1", "--duration", "50ms"}

// TestBench_ReadsTheSharedConfiguration: bench finds its Redis the way every command does:
// REDSTATE_REDIS_URL, a --config file (here a Cluster), or the Sentinel flags; the server
// selected is the one that runs the commands.
func TestBench_ReadsTheSharedConfiguration(t *testing.T) {
	t.Run("environment", func(t *testing.T) {
		srv := redistest.StartStandalone(t)
		client := srv.Client(t)
		before := commandsProcessed(t, client)
		t.Setenv("REDSTATE_REDIS_URL", srv.URL)
		out, err := run(t, benchLock...)
		if err != nil || !strings.Contains(out, "RESULT lock.cycle") {
			t.Fatalf("bench lock with REDSTATE_REDIS_URL: %v\n%s", err, out)
		}
		if after := commandsProcessed(t, client); after-before < 100 {
			t.Fatalf("the server of REDSTATE_REDIS_URL ran %d commands", after-before)
		}
	})
	t.Run("config file, cluster", func(t *testing.T) {
		t.Setenv("REDSTATE_REDIS_URL", "")
		cluster := redistest.StartCluster(t, 3)
		cfg := writeConfig(t, "redis:\n  cluster-addrs: ["+strings.Join(cluster.Addrs, ", ")+"]\n")
		out, err := run(t, append(benchLock, "--config", cfg)...)
		if err != nil || !strings.Contains(out, "RESULT lock.cycle") {
			t.Fatalf("bench lock --config (cluster): %v\n%s", err, out)
		}
	})
	t.Run("sentinel flags", func(t *testing.T) {
		t.Setenv("REDSTATE_REDIS_URL", "")
		sen := redistest.StartSentinel(t)
		client := sen.Master.Client(t)
		before := commandsProcessed(t, client)
		out, err := run(t, append(benchLock, "--redis-sentinel", sen.Addrs[0], "--redis-sentinel-master", sen.MasterName)...)
		if err != nil || !strings.Contains(out, "RESULT lock.cycle") {
			t.Fatalf("bench lock via Sentinel: %v\n%s", err, out)
		}
		if after := commandsProcessed(t, client); after-before < 100 {
			t.Fatalf("the Sentinel's master ran %d commands", after-before)
		}
	})
}

func TestBench_NoRedisConfigured(t *testing.T) {
	t.Setenv("REDSTATE_REDIS_URL", "")
	t.Setenv("REDSTATE_CONFIG", "")
	_, err := run(t, benchLock...)
	if err == nil || !strings.Contains(err.Error(), "no Redis configured") || !strings.Contains(err.Error(), "--redis URL") {
		t.Fatalf("bench lock without Redis = %v", err)
	}
}

func TestBench_InvalidConfigurationIsAnError(t *testing.T) {
	_, err := run(t, append(benchLock, "--redis", "redis://127.0.0.1:1", "--redis-cluster", "127.0.0.1:2")...)
	if err == nil || !strings.Contains(err.Error(), "exactly one topology") {
		t.Fatalf("bench lock with two topologies = %v", err)
	}
}

// TestBench_IndexSourceMySQL: a tiny `bench index --source mysql` on the test MariaDB prints
// its three RESULT lines with positive rates and ratios, leaves no key and drops its database.
func TestBench_IndexSourceMySQL(t *testing.T) {
	srv := sqltest.MariaDBTestServer(t)
	redisSrv := redistest.StartStandalone(t)
	out, err := run(t, "index", "--source", "mysql", "--mysql-url", srv.DSN(""), "--redis", redisSrv.URL,
		"--rows", "2000", "--batch", "200", "--rate", "500", "--duration", "1s")
	if err != nil {
		t.Fatalf("bench index --source mysql: %v\n%s", err, out)
	}
	fields := map[string]map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		parts := strings.Fields(line)
		if len(parts) < 3 || parts[0] != "RESULT" {
			continue
		}
		kv := map[string]float64{}
		for _, p := range parts[2:] {
			k, v, _ := strings.Cut(p, "=")
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %s is not a number", line, p)
			}
			kv[k] = n
		}
		fields[parts[1]] = kv
	}
	for _, name := range []string{"index.mysql.bulk", "index.mysql.catchup"} {
		if f := fields[name]; f["ours"] <= 0 || f["baseline"] <= 0 || f["ratio"] <= 0 {
			t.Errorf("%s: %v\n%s", name, f, out)
		}
	}
	if f := fields["index.mysql.lag"]; f["rate"] <= 0 || f["samples"] <= 0 || f["p50"] <= 0 || f["max"] < f["p99"] {
		t.Errorf("index.mysql.lag: %v\n%s", f, out)
	}
	if n := redisSrv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left in Redis", n)
	}
	db := sqltest.MariaDB(t)
	var left int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'bench\\_%'").Scan(&left); err != nil || left != 0 {
		t.Errorf("bench databases left: %d (%v)", left, err)
	}
}

// TestBenchIndex_KafkaSourcePrintsItsResult: `bench index --source kafka` with tiny sizes
// prints a RESULT index.kafka line with positive throughputs and ratio, and leaves no key.
func TestBenchIndex_KafkaSourcePrintsItsResult(t *testing.T) {
	srv := redistest.StartStandalone(t)
	out, err := run(t, "index", "--source", "kafka", "--redis", srv.URL,
		"--events", "400", "--partitions", "2", "--rows-per-message", "3", "--probes", "3")
	if err != nil {
		t.Fatalf("bench index --source kafka: %v\n%s", err, out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "RESULT index.kafka ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no RESULT index.kafka line:\n%s", out)
	}
	values := map[string]float64{}
	for _, field := range strings.Fields(line)[2:] {
		name, v, _ := strings.Cut(field, "=")
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%q in %q: %v", field, line, err)
		}
		values[name] = n
	}
	if values["ours"] <= 0 || values["baseline"] <= 0 || values["ratio"] <= 0 {
		t.Fatalf("RESULT line %q\n%s", line, out)
	}
	if n := srv.Client(t).DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// TestBenchIndex_UnknownSourceIsAnError: an unknown --source is refused, naming the known ones.
func TestBenchIndex_UnknownSourceIsAnError(t *testing.T) {
	srv := redistest.StartStandalone(t)
	_, err := run(t, "index", "--source", "mongo", "--redis", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "generated, mysql or kafka") {
		t.Fatalf("bench index --source mongo = %v", err)
	}
}
