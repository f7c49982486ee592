package cli

import (
	"context"

	"github.com/redstate/redstate/buildstatus/buildstatusblock"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/executor/executorblock"
	"github.com/redstate/redstate/feed/feedblock"
	"github.com/redstate/redstate/history/historyblock"
	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/index/indexblock"
	"github.com/redstate/redstate/queue/queueblock"
)

// blocks are the five blocks serve runs, each opened by its own package from the root's env
// and its own configuration section.
type blocks struct {
	stats    *historyblock.Block
	builds   *buildstatusblock.Block
	queue    *queueblock.Block
	executor *executorblock.Block
	index    *indexblock.Block
	feed     *feedblock.Block
}

// openBlocks opens every block in start order (the feed after the queue: its fan-out jobs ride
// the queue's broker) and adds each to the root, which starts them in that order and closes
// them in reverse. The first error stops it; what was added is closed with the root.
func (a *app) openBlocks(ctx context.Context) (*blocks, error) {
	env := a.env()
	b := &blocks{}
	// The statistics history opens first (and closes last, after one last flush): every block
	// records into its Recorder, the process's one writer.
	stats, err := historyblock.Open(ctx, env, a.cfg.Stats.History)
	if err != nil {
		return nil, err
	}
	a.add(stats)
	b.stats, env.History = stats, stats.Recorder()
	for _, open := range []func() (component.Component, error){
		func() (c component.Component, err error) {
			b.builds, err = buildstatusblock.Open(ctx, env, a.cfg.Publish.BuildStatus)
			return b.builds, err
		},
		func() (c component.Component, err error) {
			b.queue, err = queueblock.Open(ctx, env, a.cfg.Queue, a.cfg.Report)
			return b.queue, err
		},
		func() (c component.Component, err error) {
			b.executor, err = executorblock.Open(ctx, env, a.cfg.Executor)
			return b.executor, err
		},
		func() (c component.Component, err error) {
			b.index, err = indexblock.Open(ctx, env, a.cfg.Index)
			return b.index, err
		},
		func() (c component.Component, err error) {
			b.feed, err = feedblock.Open(ctx, env, a.cfg.Feed, b.queue)
			return b.feed, err
		},
	} {
		c, err := open()
		if err != nil {
			return nil, err
		}
		a.add(c)
	}
	return b, nil
}

// deps is what the HTTP API serves from the blocks and the root.
func (b *blocks) deps(a *app) httpapi.Deps {
	d := httpapi.Deps{Builds: b.builds.Store(), Reports: b.queue.Reports(), Queues: b.queue.Admin, Producers: b.queue.Producer,
		ExecutorRunner: b.executor.Runner, Index: b.index.Indexer(), IndexPush: b.index.Push(), Feed: b.feed.Service(), Health: a.health,
		QueueNames: b.queue.Names, QueuePool: b.queue.PoolOf, Throughput: b.queue.ThroughputStore(), IndexSources: func() []httpapi.IndexSourceStatus { return indexSourceStatus(b.index.Pulled()) },
		Overview: a.overview, History: b.stats.Reader(),
	}
	if l := b.executor.Lister(); l != nil {
		d.ExecutorLister = l
	}
	return d
}
