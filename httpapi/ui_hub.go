package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redstate/redstate/internal/ctxsleep"
)

// Defaults of the dashboard stream (GET /v1/ui/events).
const (
	// DefaultDashboardPollInterval is how often a topic without change events of its own is
	// read while someone subscribes to it, when Config.DashboardPollInterval is 0.
	DefaultDashboardPollInterval = time.Second
	// DefaultDashboardUpdatesPerSecond bounds the changes one topic announces per second, when
	// Config.DashboardUpdatesPerSecond is 0.
	DefaultDashboardUpdatesPerSecond = 2
	// DefaultDashboardMaxTopics bounds the topics of one stream, when Config.DashboardMaxTopics
	// is 0.
	DefaultDashboardMaxTopics = 32
)

// uiSource is what a dashboard topic watches: the state whose change is the topic's change,
// and what makes the hub read it again.
type uiSource struct {
	// probe reads the topic's state; the topic changes when the bytes change. An error is
	// state too (its message is digested), so a page learns that its block went away and back.
	probe func(ctx context.Context) ([]byte, error)
	// poll makes the hub probe every poll interval (topics without change events, and topics
	// whose events cover this instance only).
	poll bool
	// watch, when set, delivers a value on every change (the block's own events); the hub probes
	// after each, throttled. A watch that fails or ends falls back to polling.
	watch func(ctx context.Context) (<-chan struct{}, error)
	// kind groups topics that nudge together (hub.nudge), e.g. every executor topic on an
	// executor event.
	kind string
}

// uiHub runs the dashboard's topics: one watcher per topic key, shared by every stream that
// subscribes to it, started by the first subscriber and stopped with the last (a topic nobody
// listens to costs nothing). A watcher probes its source when polled, nudged or notified, at
// most one change per minGap, and announces each change as a new version to its subscribers.
// Versions are drawn from one counter per process (epoch), so a topic stopped and started
// again never repeats one, and a version of another process is never taken for a current one.
type uiHub struct {
	epoch  string
	poll   time.Duration
	minGap time.Duration
	logger *slog.Logger
	// wait sleeps d or until ctx ends (false then); tests replace it to hold the throttle.
	wait func(ctx context.Context, d time.Duration) bool

	mu     sync.Mutex
	seq    uint64
	topics map[string]*uiTopic
	// known keeps the last version and digest of stopped topics (at most maxKnownTopics), so
	// a topic started again keeps its version while its state is the same: a client resuming
	// after its stream (the topic's only one) dropped is not sent what it has.
	known map[string]uiKnown
}

// maxKnownTopics bounds uiHub.known; past it an arbitrary entry is forgotten (its topic is
// then announced to a resuming client once more).
const maxKnownTopics = 10000

// uiKnown is a stopped topic's last version and digest.
type uiKnown struct {
	version uint64
	digest  [sha256.Size]byte
}

// uiTopic is one running topic.
type uiTopic struct {
	key     string
	src     uiSource
	subs    map[*uiSub]struct{}
	version uint64 // 0 until the first probe
	digest  [sha256.Size]byte
	nudges  chan struct{}
	cancel  context.CancelFunc
}

// uiSub is one stream's subscription: the topics that changed since they were last written.
type uiSub struct {
	keys []string
	// wake receives a value when a topic becomes pending (coalesced: capacity 1).
	wake chan struct{}

	mu      sync.Mutex
	pending map[string]bool
	// sent is the version last written per topic (the resume token).
	sent map[string]uint64
}

// newUIHub returns a hub probing polled topics every poll and announcing at most perSecond
// changes per topic per second.
func newUIHub(poll time.Duration, perSecond int, logger *slog.Logger) *uiHub {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &uiHub{
		epoch: hex.EncodeToString(b), poll: poll, minGap: time.Second / time.Duration(perSecond), logger: logger,
		wait: ctxsleep.Sleep, topics: make(map[string]*uiTopic), known: make(map[string]uiKnown),
	}
}

// subscribe adds a subscription to the topics srcs (by key), starting the topics nobody
// watched. since holds the versions the client already has (parseUIToken): a topic whose
// current version is the same is not announced again; every other one is announced as soon
// as its version is known.
func (h *uiHub) subscribe(srcs map[string]uiSource, since map[string]uint64) *uiSub {
	sub := &uiSub{wake: make(chan struct{}, 1), pending: make(map[string]bool), sent: make(map[string]uint64)}
	for k := range srcs {
		sub.keys = append(sub.keys, k)
	}
	slices.Sort(sub.keys)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range sub.keys {
		t := h.topics[k]
		if t == nil {
			t = h.start(k, srcs[k])
		}
		t.subs[sub] = struct{}{}
		if v, ok := since[k]; ok {
			sub.sent[k] = v
		}
		if t.version != 0 && sub.sent[k] != t.version {
			sub.mark(k)
		} // else: announced by its first probe unless the client has that version

	}
	return sub
}

// start runs a new topic's watcher (h.mu held).
func (h *uiHub) start(key string, src uiSource) *uiTopic {
	ctx, cancel := context.WithCancel(context.Background())
	t := &uiTopic{key: key, src: src, subs: make(map[*uiSub]struct{}), nudges: make(chan struct{}, 1), cancel: cancel}
	h.topics[key] = t
	go h.run(ctx, t)
	return t
}

// unsubscribe ends sub, stopping the topics nobody else watches.
func (h *uiHub) unsubscribe(sub *uiSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range sub.keys {
		t := h.topics[k]
		if t == nil {
			continue
		}
		delete(t.subs, sub)
		if len(t.subs) == 0 {
			t.cancel()
			delete(h.topics, k)
			if t.version != 0 {
				if len(h.known) >= maxKnownTopics {
					for old := range h.known {
						delete(h.known, old)
						break
					}
				}
				h.known[k] = uiKnown{version: t.version, digest: t.digest}
			}
		}
	}
}

// running returns how many topics have a watcher.
func (h *uiHub) running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics)
}

// nudge makes every running topic of kind probe again (throttled as usual).
func (h *uiHub) nudge(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.topics {
		if t.src.kind == kind {
			select {
			case t.nudges <- struct{}{}:
			default:
			}
		}
	}
}

// run is a topic's watcher: probe, announce a change, wait for a trigger, let minGap pass since
// the last change (the throttle: triggers meanwhile coalesce into one probe), repeat until ctx
// ends.
func (h *uiHub) run(ctx context.Context, t *uiTopic) {
	var changes <-chan struct{}
	poll := t.src.poll
	if t.src.watch != nil {
		ch, err := t.src.watch(ctx)
		if err != nil {
			h.logger.LogAttrs(ctx, slog.LevelWarn, "dashboard topic: cannot watch its changes; polling instead",
				slog.String("topic", t.key), slog.Any("error", err))
			poll = true
		}
		changes = ch
	}
	var ticks <-chan time.Time
	if poll {
		ticker := time.NewTicker(h.poll)
		defer ticker.Stop()
		ticks = ticker.C
	}
	var last [sha256.Size]byte
	var changedAt time.Time
	first := true
	for {
		sum := h.probe(ctx, t)
		if ctx.Err() != nil {
			return
		}
		if first || sum != last {
			h.announce(t, sum, first)
			changedAt = time.Now()
		}
		first, last = false, sum
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-t.nudges:
		case _, ok := <-changes:
			if !ok { // the watch ended: poll from now on
				changes = nil
				if ticks == nil {
					ticker := time.NewTicker(h.poll)
					defer ticker.Stop()
					ticks = ticker.C
				}
			}
		}
		if gap := h.minGap - time.Since(changedAt); gap > 0 && !h.wait(ctx, gap) {
			return
		}
	}
}

// probeTimeout bounds one probe of a topic's state.
const probeTimeout = 5 * time.Second

// probe returns the digest of t's state (of the error's message when it cannot be read).
func (h *uiHub) probe(ctx context.Context, t *uiTopic) [sha256.Size]byte {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	state, err := t.src.probe(ctx)
	if err != nil {
		return sha256.Sum256([]byte("error: " + err.Error()))
	}
	return sha256.Sum256(state)
}

// announce records t's new state digest: a new version, except on the first probe of a topic
// started again whose state is the one it stopped with (it keeps that version). It marks the
// topic pending at the subscribers that were not sent that version.
func (h *uiHub) announce(t *uiTopic, digest [sha256.Size]byte, first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k, ok := h.known[t.key]; first && ok && k.digest == digest {
		t.version = k.version
	} else {
		h.seq++
		t.version = h.seq
	}
	delete(h.known, t.key)
	t.digest = digest
	for sub := range t.subs {
		sub.mu.Lock()
		has := sub.sent[t.key] == t.version
		sub.mu.Unlock()
		if !has {
			sub.mark(t.key)
		}
	}
}

// mark records that topic k changed and wakes the stream.
func (s *uiSub) mark(k string) {
	s.mu.Lock()
	s.pending[k] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// uiChange is one change to write: a topic and its new version.
type uiChange struct {
	topic   string
	version uint64
}

// take returns the pending topics with their current versions (sorted by topic) and records
// them as sent.
func (h *uiHub) take(sub *uiSub) []uiChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub.mu.Lock()
	defer sub.mu.Unlock()
	var out []uiChange
	for _, k := range sub.keys {
		if !sub.pending[k] {
			continue
		}
		delete(sub.pending, k)
		v := uint64(0)
		if t := h.topics[k]; t != nil {
			v = t.version
		}
		if v == 0 || v == sub.sent[k] {
			continue
		}
		sub.sent[k] = v
		out = append(out, uiChange{topic: k, version: v})
	}
	return out
}

// token is the resume token of what sub has been sent: the hub's epoch, then each topic's
// version as a URL query ("3f0c…~builds=4&queues=9").
func (h *uiHub) token(sub *uiSub) string {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	q := url.Values{}
	for k, v := range sub.sent {
		q.Set(k, strconv.FormatUint(v, 10))
	}
	return h.epoch + "~" + q.Encode()
}

// parseUIToken reads a resume token of this hub: the versions the client has, by topic. A
// token of another process (or none, or a malformed one) yields none: every topic is sent.
func (h *uiHub) parseUIToken(tok string) map[string]uint64 {
	epoch, query, ok := strings.Cut(tok, "~")
	if !ok || epoch != h.epoch {
		return nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil
	}
	out := make(map[string]uint64, len(q))
	for k, vs := range q {
		if v, err := strconv.ParseUint(vs[0], 10, 64); err == nil {
			out[k] = v
		}
	}
	return out
}
