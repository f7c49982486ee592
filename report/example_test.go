package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/sqlrecords"
	"github.com/redstate/redstate/sqldb"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// The report flow embedded in a Go program with its own go-redis client: records in SQL (here
// SQLite in a temporary directory), jobs on the Redis queue "report:queue", the built-in
// generator as the worker's handler. A submit returns at once (status 3, 生成中); the client
// polls until the report is done (4, 已完成) or failed (5).
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	dir, err := os.MkdirTemp("", "report-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqldb.Open(ctx, "sqlite:"+filepath.Join(dir, "records.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	records, err := sqlrecords.New(ctx, db, sqlrecords.Options{}) // creates assessment_records
	if err != nil {
		log.Fatal(err)
	}
	broker, err := redisqueue.New(client, redisqueue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	svc, err := report.NewService(broker, records, report.Options{})
	if err != nil {
		log.Fatal(err)
	}

	generator := &report.Generator{Records: records, Delay: -1} // no artificial work time
	worker, err := queue.NewWorker(broker, generator.Handler(), queue.WorkerSettings{Queue: svc.Queue(), Check: report.CheckJob})
	if err != nil {
		log.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- worker.Run(run) }()

	record, err := svc.Submit(ctx, 12345, json.RawMessage(`{"openness": [4, 5, 3], "grit": 2}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("submitted:", record.Status, report.StatusText(record.Status))

	// Poll the result as a client does (GET /api/assessment/{id}/result).
	poll, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	status, err := svc.Status(poll, 12345)
	for err == nil && status.Status == report.StatusGenerating {
		time.Sleep(20 * time.Millisecond)
		status, err = svc.Status(poll, 12345)
	}
	if err != nil {
		log.Fatal(err)
	}
	var result report.Report
	if err := json.Unmarshal(status.Result, &result); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done: %d %s, score %g over %d answers, level %s\n", status.Status, status.StatusText, result.Score, result.AnswerCount, result.Level)

	stop()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// submitted: 3 生成中
	// done: 4 已完成, score 14 over 4 answers, level high
}
