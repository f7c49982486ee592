package queueblock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queueblock"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestBlock_StartsThePeriodicScheduler: with queue.periodic entries the block's Start runs the
// scheduler, on memory and on Redis: an @every 1s entry puts its tick jobs, with their tick ids,
// on its queue.
func TestBlock_StartsThePeriodicScheduler(t *testing.T) {
	for name, env := range map[string]func(t *testing.T) component.Env{
		"Memory": func(*testing.T) component.Env { return component.Env{} },
		"Redis": func(t *testing.T) component.Env {
			return component.Env{Redis: redistest.SharedStandalone(t).Client(t), Namespace: "periodic-block-"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := queue.Config{RecordStore: report.RecordStoreMemory,
				Queues:     []queue.Spec{{Name: "beats", Handler: queue.HandlerExternal}},
				Periodic:   []queue.PeriodicSpec{{Name: "beat", Cron: "@every 1s", Queue: "beats", Payload: map[string]any{"n": 1}}},
				Reconciler: queue.ReconcilerConfig{Age: time.Minute, Interval: time.Minute}}
			ctx := context.Background()
			qb, err := queueblock.Open(ctx, env(t), cfg, report.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := qb.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = qb.Close(ctx) }()
			deadline := time.Now().Add(20 * time.Second)
			for {
				found, err := qb.Broker().HasJob(ctx, "beats", func(m queue.Message) bool {
					return strings.HasPrefix(m.JobID, "cron:beat:") && string(m.Payload) == `{"n":1}`
				})
				if err != nil {
					t.Fatal(err)
				}
				if found {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("no periodic job on the queue after 20 s")
				}
				time.Sleep(20 * time.Millisecond) // the tick comes on the real clock
			}
		})
	}
}
