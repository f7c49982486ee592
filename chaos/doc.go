// Package chaos is the Redis failover fault harness. Its tests carry the build tag
// chaos and run with `make chaos`: each starts a Sentinel topology (a master, two replicas,
// three sentinels) or a Cluster with one replica per master (redistest.StartSentinelHA,
// redistest.StartClusterHA), drives steady load from the blocks through the product's client
// (redisconn.New), and kills (SIGKILL), pauses (SIGSTOP beyond the failure-detection timeout)
// and gracefully restarts the master several times. Each block's load model records which
// writes were acknowledged; after each fault the harness counts the acknowledged writes that
// were lost, the duplicates, and the time until writes succeed again, and logs a table of
// block × topology × fault. The http block measures the same through the real binary's
// `serve` (its composition root, circuit breaker and probe included): the time from the fault
// and from the promotion to the first 2xx, the 503s, and the lines serve logged meanwhile.
package chaos
