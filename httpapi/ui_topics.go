package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/queue"
)

// uiTopicList names the topics of GET /v1/ui/events for error messages.
const uiTopicList = "overview, builds, project:<projectId>, build:<buildId>, queues (admin), queue:<queue>, " +
	"executor (admin), plan:<planId>, task:<taskId>, tenant:<tenantId>, index, feed:<userId>"

// uiBuildsPage is how many builds the builds topics watch: the dashboard's list page.
const uiBuildsPage = 50

// Kinds of topics nudged together.
const uiKindExecutor = "executor"

// uiSourceOf resolves a topic of the dashboard stream to what it watches and the role it
// needs: the role of the API read that the page makes when the topic changes, so a stream
// tells nobody about a state they could not read. Errors: EINVALID (unknown topic or bad
// argument), ENOTFOUND (the block is not enabled here).
func (s *server) uiSourceOf(key string) (uiSource, role, error) {
	kind, arg, hasArg := strings.Cut(key, ":")
	if hasArg != (kind == "project" || kind == "build" || kind == "queue" || kind == "plan" || kind == "task" || kind == "tenant" || kind == "feed") {
		return uiSource{}, 0, redstate.Errorf(redstate.EINVALID, "unknown topic %q; topics: %s", truncate(key), uiTopicList)
	}
	switch kind {
	case "overview":
		if s.overviewFn == nil {
			return uiSource{}, 0, redstate.Errorf(redstate.ENOTFOUND, "this server has no overview")
		}
		return uiSource{poll: true, probe: s.probeOverview}, roleRead, nil
	case "builds":
		return uiSource{poll: true, probe: func(ctx context.Context) ([]byte, error) {
			p, err := s.builds.List(ctx, "", uiBuildsPage)
			return buildsDigest(p, err)
		}}, roleRead, nil
	case "project":
		if err := buildstatus.ValidateProjectID(arg); err != nil {
			return uiSource{}, 0, err
		}
		return uiSource{poll: true, probe: func(ctx context.Context) ([]byte, error) {
			p, err := s.builds.ListProject(ctx, arg, "", uiBuildsPage)
			return buildsDigest(p, err)
		}}, roleRead, nil
	case "build":
		id, err := buildstatus.NormalizeBuildID(arg)
		if err != nil {
			return uiSource{}, 0, err
		}
		return s.buildSource(id), roleRead, nil
	case "queues":
		return uiSource{poll: true, probe: s.probeQueues}, roleAdmin, nil
	case "queue":
		if err := queue.ValidateQueueName(arg); err != nil {
			return uiSource{}, 0, err
		}
		var a *queue.Admin
		if s.queues != nil {
			a = s.queues(arg)
		}
		if a == nil {
			return uiSource{}, 0, redstate.Errorf(redstate.ENOTFOUND, "queue %q is not configured on this server", arg)
		}
		return uiSource{poll: true, probe: func(ctx context.Context) ([]byte, error) { return s.probeQueue(ctx, arg, a) }}, roleRead, nil
	case "executor":
		return s.executorSource(func(ctx context.Context, ex *executor.Runner) (any, error) { return s.executorStateDoc(ctx, ex) }), roleAdmin, nil
	case "plan", "task", "tenant":
		if err := executor.ValidateID(kind+"Id", arg); err != nil {
			return uiSource{}, 0, err
		}
		read := map[string]func(*executor.Runner, context.Context, string) (executor.TaskStatusInfo, error){
			"task": (*executor.Runner).TaskStatus, "tenant": (*executor.Runner).TaskStatusByTenant,
		}[kind]
		return s.executorSource(func(ctx context.Context, ex *executor.Runner) (any, error) {
			if kind == "plan" {
				return ex.PlanStatus(ctx, arg)
			}
			return read(ex, ctx, arg)
		}), roleRead, nil
	case "index":
		if s.index == nil {
			return uiSource{}, 0, redstate.Errorf(redstate.ENOTFOUND, "the index block is not enabled on this server")
		}
		return uiSource{poll: true, probe: func(ctx context.Context) ([]byte, error) { return json.Marshal(s.indexStatusDoc(ctx)) }}, roleRead, nil
	case "feed":
		if s.feed == nil {
			return uiSource{}, 0, errNoFeed()
		}
		viewer, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || viewer <= 0 {
			return uiSource{}, 0, redstate.Errorf(redstate.EINVALID, "topic feed:<userId> needs a positive integer user id, got %q", truncate(arg))
		}
		return s.feedSource(viewer), roleRead, nil
	}
	return uiSource{}, 0, redstate.Errorf(redstate.EINVALID, "unknown topic %q; topics: %s", truncate(key), uiTopicList)
}

// probeOverview reads the overview without the Redis ping's round trip, which differs on
// every read.
func (s *server) probeOverview(ctx context.Context) ([]byte, error) {
	o := s.overviewFn(ctx)
	o.Redis.LatencyMS = 0
	return json.Marshal(o)
}

// buildsDigest is the state of a page of builds: their ETags (of the stored bytes).
func buildsDigest(p *buildstatus.Page, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, d := range p.Builds {
		b.WriteString(d.ETag() + "\n")
	}
	return []byte(b.String()), nil
}

// buildSource watches one build through the store's change events (every process's), and
// reads its ETag ("missing" when it does not exist).
func (s *server) buildSource(id string) uiSource {
	return uiSource{
		probe: func(ctx context.Context) ([]byte, error) {
			doc, err := s.builds.Get(ctx, id)
			if redstate.IsCode(err, redstate.ENOTFOUND) {
				return []byte("missing"), nil
			}
			if err != nil {
				return nil, err
			}
			return []byte(doc.ETag()), nil
		},
		watch: func(ctx context.Context) (<-chan struct{}, error) {
			events, err := s.builds.Watch(ctx, id)
			if err != nil {
				return nil, err
			}
			return signalOf(events), nil
		},
	}
}

// signalOf turns a channel of events into change signals (coalesced), closed when events is.
func signalOf[E any](events <-chan E) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for range events {
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// probeQueues reads every configured queue's entry of GET /v1/queues (pause included).
func (s *server) probeQueues(ctx context.Context) ([]byte, error) {
	var out []queueSummary
	if s.queueNames != nil {
		for _, name := range s.queueNames() {
			a := s.queues(name)
			if a == nil {
				continue
			}
			out = append(out, s.queueSummaryOf(ctx, name, a))
		}
	}
	return json.Marshal(out)
}

// probeQueue reads what a queue's page shows changing: its sizes by state, whether it is
// paused, and (with the shared throughput figures) this minute's outcomes, which move on
// every job that finishes even when the sizes come out the same.
func (s *server) probeQueue(ctx context.Context, name string, a *queue.Admin) ([]byte, error) {
	st, err := a.Stats(ctx)
	if err != nil {
		return nil, err
	}
	paused, err := a.Paused(ctx)
	if err != nil {
		return nil, err
	}
	state := struct {
		Stats   queue.Stats                `json:"stats"`
		Paused  bool                       `json:"paused"`
		Outcome map[int64]map[string]int64 `json:"outcome,omitempty"`
	}{Stats: st, Paused: paused}
	if s.throughput != nil {
		minute := time.Now().Unix() / 60
		if state.Outcome, err = s.throughput.Throughput(ctx, name, minute-1, minute); err != nil {
			return nil, err
		}
	}
	return json.Marshal(state)
}

// executorSource watches an executor read: polled (tasks run on every instance) and nudged by
// this instance's executor events, so a change made here shows without waiting for the poll.
func (s *server) executorSource(read func(ctx context.Context, ex *executor.Runner) (any, error)) uiSource {
	return uiSource{poll: true, kind: uiKindExecutor, probe: func(ctx context.Context) ([]byte, error) {
		ex, err := s.runner()
		if err != nil {
			return nil, err
		}
		s.hookExecutor(ex)
		v, err := read(ctx, ex)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}}
}

// executorHooks remembers the runners whose events nudge the executor topics (a hook cannot be
// removed, so each runner gets one).
type executorHooks struct {
	mu     sync.Mutex
	hooked map[*executor.Runner]bool
}

// hookExecutor makes ex's events nudge the executor topics, once per runner.
func (s *server) hookExecutor(ex *executor.Runner) {
	s.execHooks.mu.Lock()
	defer s.execHooks.mu.Unlock()
	if s.execHooks.hooked[ex] {
		return
	}
	if s.execHooks.hooked == nil {
		s.execHooks.hooked = make(map[*executor.Runner]bool)
	}
	s.execHooks.hooked[ex] = true
	ex.OnEvent(func(executor.Event) { s.ui.nudge(uiKindExecutor) })
}

// feedSource watches a user's unread counts: signalled by the feed on this instance's changes,
// polled for the others'.
func (s *server) feedSource(viewer int64) uiSource {
	return uiSource{
		poll: true,
		probe: func(ctx context.Context) ([]byte, error) {
			counts, total, err := s.feed.UnreadCounts(ctx, viewer)
			if err != nil {
				return nil, err
			}
			return feedCountsJSON(counts, total), nil
		},
		watch: func(ctx context.Context) (<-chan struct{}, error) {
			signal, unsubscribe := s.feed.Subscribe(viewer)
			context.AfterFunc(ctx, unsubscribe)
			return signal, nil
		},
	}
}
