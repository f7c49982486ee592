// Command redstate-bench benchmarks redstate's blocks against their peers (hibiken/asynq,
// bsm/redislock, a plain Kafka sink, go-mysql-transfer's approach) and raw Redis commands on
// the same server; see `redstate-bench --help` and docs/benchmarks.md.
package main

import (
	"os"

	"github.com/redstate/redstate/bench/benchcmd"
)

func main() { os.Exit(benchcmd.Execute()) }
