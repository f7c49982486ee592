package buildstatusbench

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/redisconn"
)

// daprName is the RESULT name of the comparison with Dapr's Redis state store.
const daprName = "buildstatus.save_vs_dapr"

// DaprSave is the save compared with Dapr's Redis state store (components-contrib state/redis)
// on the same Redis: ours is redisstore's Save with a compare-and-set (IfNoneMatch for a build's
// first write, then IfMatch with the ETag the previous save returned), keeping the document,
// the project index and the change event; Dapr's is Set with first-write concurrency (no ETag
// for the first write, then the previous write's ETag) and ttlInSeconds. Same documents, same
// number of writers, each writer saving its own builds in turn.
type DaprSave struct {
	bench.Comparison
	// OursCPU and BaselineCPU are the server's CPU time over each side's slices
	// (redisconn.ServerCPU): reading, parsing, running and answering the requests.
	OursCPU, BaselineCPU time.Duration
	// OursRedis and BaselineRedis are INFO commandstats over each side's slices.
	OursRedis, BaselineRedis redisconn.CommandStats
	// OursClientCPU and BaselineClientCPU are the CPU time of the writers' processes over
	// each side's slices (getrusage: this process for ours, the peer's for Dapr; 0 where the
	// system does not say).
	OursClientCPU, BaselineClientCPU time.Duration
}

// usPerOp returns d in microseconds per operation of r (0 without operations).
func usPerOp(d time.Duration, r *bench.Result) float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / 1e3 / float64(r.Ops)
}

// ResultLine formats d as
//
//	RESULT buildstatus.save_vs_dapr ours=<saves/s> baseline=<Dapr sets/s> ratio=<ours/Dapr> p99_ms=… baseline_p99_ms=… redis_cpu_us=<ours> baseline_redis_cpu_us=<Dapr> client_cpu_us=<ours> baseline_client_cpu_us=<Dapr>
//
// redis_cpu_us being the server's CPU µs per save (INFO cpu), client_cpu_us the writers'
// process's (getrusage).
func (d DaprSave) ResultLine() string {
	return fmt.Sprintf("%s redis_cpu_us=%.2f baseline_redis_cpu_us=%.2f client_cpu_us=%.2f baseline_client_cpu_us=%.2f",
		bench.ResultLine(d.Comparison), usPerOp(d.OursCPU, d.Ours), usPerOp(d.BaselineCPU, d.Baseline),
		usPerOp(d.OursClientCPU, d.Ours), usPerOp(d.BaselineClientCPU, d.Baseline))
}

// CommandLines returns one line per side listing its commands (INFO commandstats over its
// slices): calls and µs per call, most server time first, then the calls per save.
func (d DaprSave) CommandLines() []string {
	line := func(side string, s redisconn.CommandStats, r *bench.Result) string {
		per := ""
		if r.Ops > 0 {
			for _, name := range []string{"evalsha", "eval", "expire"} {
				if c, ok := s[name]; ok {
					per += fmt.Sprintf(" %s/op=%.3f", name, float64(c.Calls)/float64(r.Ops))
				}
			}
		}
		return fmt.Sprintf("# %s %s: %s;%s", daprName, side, s, per)
	}
	return []string{line("ours", d.OursRedis, d.Ours), line("dapr", d.BaselineRedis, d.Baseline)}
}

// casWriter is our side's state: documents of builds not yet saved, and the ETag of each as
// last saved ("" before its first save). Writer c owns the documents whose index is c modulo
// Clients and saves them in turn, as the peer's writers do.
type casWriter struct {
	docs  []*buildstatus.PublishResponse
	etags []string
	next  []int
}

// daprDocs returns opts.Builds fresh documents shaped like the seeded ones, their encodings and
// the peer's keys for them (under the bench's prefix, so cleanup removes them).
func (w *workload) daprDocs() (*casWriter, []string, []string, error) {
	n, now := w.opts.Builds, time.Now()
	cw := &casWriter{etags: make([]string, n), next: make([]int, w.opts.Clients)}
	keys, docs := make([]string, n), make([]string, n)
	for i := range n {
		d := newDoc(uuid.NewString(), i, w.opts.Size, now)
		enc, err := buildstatus.Encode(d)
		if err != nil {
			return nil, nil, nil, err
		}
		cw.docs = append(cw.docs, d)
		keys[i], docs[i] = w.keys.Prefix+"dapr:"+d.BuildID, string(enc)
	}
	return cw, keys, docs, nil
}

// saveCAS saves writer c's next build: IfNoneMatch the first time, then IfMatch its ETag. The
// save is not cut when the slice ends (its context is not canceled with the slice's), so that
// the ETag it returns is known for the writer's next save of the build; the peer's writers
// finish their last Set the same way.
func (w *workload) saveCAS(cw *casWriter) bench.Op {
	return func(ctx context.Context, c int, _ int64) error {
		i := c + cw.next[c]*w.opts.Clients
		if i >= len(cw.docs) {
			cw.next[c], i = 0, c
		}
		o := buildstatus.SaveOptions{IfMatch: cw.etags[i], IfNoneMatch: cw.etags[i] == ""}
		b, err := w.store.Save(context.WithoutCancel(ctx), cw.docs[i], o)
		if err != nil {
			return err
		}
		cw.etags[i] = b.ETag()
		cw.next[c]++
		return nil
	}
}

// daprPeerPath returns the peer to run: Options.DaprPeer, else DefaultDaprPeer.
func (w *workload) daprPeerPath() string {
	if w.opts.DaprPeer != "" {
		return w.opts.DaprPeer
	}
	return DefaultDaprPeer()
}

// daprUnavailable returns why save_vs_dapr cannot run here, nil when it can.
func (w *workload) daprUnavailable() error {
	if _, err := daprAddr(w.opts.Client); err != nil {
		return err
	}
	if w.daprPeerPath() == "" {
		return errNoDaprPeer
	}
	return nil
}

// saveVsDapr measures our compare-and-set save against Dapr's Set with an ETag: the peer
// program is built and started, then the two alternate in slices (A B B A, as bench.RunPair)
// with the server's CPU and commandstats read around each slice.
func (w *workload) saveVsDapr(ctx context.Context) (*DaprSave, error) {
	setup, err := daprAddr(w.opts.Client)
	if err != nil {
		return nil, err
	}
	cw, keys, docs, err := w.daprDocs()
	if err != nil {
		return nil, err
	}
	setup.Clients, setup.Keys, setup.Docs = w.opts.Clients, keys, docs
	setup.TTLSeconds = int(max(w.opts.TTL/time.Second, 1))
	peer, err := startDaprPeer(ctx, w.daprPeerPath(), setup, w.opts.Progressf)
	if err != nil {
		return nil, err
	}
	defer peer.close()

	cfg := w.opts.Config(w.opts.Duration)
	w.opts.Progressf("save_vs_dapr: ours (compare-and-set save) vs Dapr's Set with an ETag, %d clients, %s each, alternating\n", cfg.Clients, cfg.Duration)
	n := max(2, min(int(cfg.Duration/time.Second), 10))
	n += n % 2
	one := cfg
	one.Duration = cfg.Duration / time.Duration(n)
	res := &DaprSave{Comparison: bench.Comparison{Name: daprName,
		Ours: &bench.Result{Name: "save_vs_dapr/ours"}, Baseline: &bench.Result{Name: "save_vs_dapr/dapr"}}}
	ours := func() error {
		cpu, stats, err := serverCost(ctx, w, func() error {
			c0 := processCPU()
			res.Ours.Merge(bench.Run(ctx, "save_vs_dapr/ours", one, w.saveCAS(cw)))
			res.OursClientCPU += processCPU() - c0
			return nil
		})
		res.OursCPU += cpu
		res.OursRedis = addStats(res.OursRedis, stats)
		return err
	}
	dapr := func() error {
		cpu, stats, err := serverCost(ctx, w, func() error {
			r, peerCPU, err := peer.run("save_vs_dapr/dapr", one.Duration)
			if err == nil {
				res.Baseline.Merge(r)
				res.BaselineClientCPU += peerCPU
			}
			return err
		})
		res.BaselineCPU += cpu
		res.BaselineRedis = addStats(res.BaselineRedis, stats)
		return err
	}
	for i := range n {
		order := []func() error{ours, dapr}
		if i%2 == 1 {
			order[0], order[1] = dapr, ours
		}
		for _, f := range order {
			if err := f(); err != nil {
				return res, err
			}
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	return res, bench.Failed(res.Ours, res.Baseline)
}

// serverCost runs phase and returns the server's CPU time and commandstats over it.
func serverCost(ctx context.Context, w *workload, phase func() error) (time.Duration, redisconn.CommandStats, error) {
	before, err := redisconn.ReadCommandStats(ctx, w.opts.Client)
	if err != nil {
		return 0, nil, err
	}
	cpu0, err := redisconn.ServerCPU(ctx, w.opts.Client)
	if err != nil {
		return 0, nil, err
	}
	if err := phase(); err != nil {
		return 0, nil, err
	}
	cpu1, err := redisconn.ServerCPU(ctx, w.opts.Client)
	if err != nil {
		return 0, nil, err
	}
	after, err := redisconn.ReadCommandStats(ctx, w.opts.Client)
	if err != nil {
		return 0, nil, err
	}
	stats := after.Sub(before)
	delete(stats, "info") // the bench's own reads of these counters
	return cpu1 - cpu0, stats, nil
}

// addStats returns a + b, command by command.
func addStats(a, b redisconn.CommandStats) redisconn.CommandStats {
	out := redisconn.CommandStats{}
	for _, s := range []redisconn.CommandStats{a, b} {
		for name, c := range s {
			o := out[name]
			out[name] = redisconn.CommandStat{Calls: o.Calls + c.Calls, Usec: o.Usec + c.Usec}
		}
	}
	return out
}
