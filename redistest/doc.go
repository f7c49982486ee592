// Package redistest starts real redis-server processes for tests: standalone
// servers, Redis Cluster deployments and a Sentinel setup, each listening on a
// free loopback port with its own temporary directory. Redis is never mocked.
//
// Typical use:
//
//	func TestSomething(t *testing.T) {
//		srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
//		rdb := srv.Client(t)
//		...
//	}
//
// Packages that run many tests against Redis can share one standalone server
// and one 3-master cluster per test binary with SharedStandalone and
// SharedCluster (each call flushes all data); such packages call Main from
// their TestMain so the shared servers are stopped when the binary ends:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Example functions take no *testing.T: a package whose examples use Redis calls
// MainWithStandalone from TestMain instead, which hands them the shared standalone server's
// address and leaves them out where a test would be skipped (-short, no redis-server).
//
// For failover tests, StartSentinelHA starts a master with two replicas and three sentinels
// (quorum 2) and StartClusterHA a cluster with one replica per master; Server.Crash (SIGKILL),
// Pause/Resume (SIGSTOP/SIGCONT) and Restart inject the faults, and SentinelHA.Master,
// Cluster.ShardMaster and the Wait helpers follow who is master. Sentinels run as
// `redis-server --sentinel`: Debian's redis-sentinel package only adds a service unit and a
// redis-sentinel link to that same binary, so redis-server is all these helpers need.
//
// Every helper skips the test when redis-server is not installed or when
// tests run with -short (see RequireServer). Child processes are killed when
// the test binary dies (Linux: Pdeathsig), so a crashed or timed-out test
// run does not leave servers behind.
package redistest
