package index

import (
	"context"
	"sync/atomic"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
)

// PushSource is the source of the changes producers push (POST /v1/index/events): the request
// handler applies them and reports each batch with Record; its status is those counters. It
// reads no upstream, so it has no position and no lag, and Run only waits for the end.
type PushSource struct {
	batches, applied, stale, skipped, failed atomic.Int64
	// refused counts the batches the store refused (answered 503: the producer resends);
	// refusal is the last refusal's message, nil once a batch is applied again.
	refused atomic.Int64
	refusal atomic.Pointer[string]
}

// PushDetail is a PushSource's counters since the process started.
type PushDetail struct {
	// Batches counts the requests applied; Refused those the store refused (the producer was
	// answered 503 and resends).
	Batches, Refused int64
	// Applied, Stale, Skipped and Failed sum the batches' index.Result counts.
	Applied, Stale, Skipped, Failed int64
}

// NewPushSource returns a PushSource with zero counters.
func NewPushSource() *PushSource { return &PushSource{} }

// Record counts one batch: its result, or err when the store refused it. A nil PushSource
// counts nothing.
func (p *PushSource) Record(res Result, err error) {
	if p == nil {
		return
	}
	if err != nil {
		msg := redstate.ErrorMessage(err)
		p.refused.Add(1)
		p.refusal.Store(&msg)
		return
	}
	p.batches.Add(1)
	p.applied.Add(int64(res.Applied))
	p.stale.Add(int64(res.Stale))
	p.skipped.Add(int64(res.Skipped))
	p.failed.Add(int64(res.Failed))
	p.refusal.Store(nil)
}

// Run waits for ctx to end and returns nil: pushed changes are applied by the request handler.
func (p *PushSource) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Status is the counters: Events the changes applied, Detail a PushDetail.
func (p *PushSource) Status() SourceStatus {
	d := PushDetail{Batches: p.batches.Load(), Refused: p.refused.Load(), Applied: p.applied.Load(), Stale: p.stale.Load(),
		Skipped: p.skipped.Load(), Failed: p.failed.Load()}
	return SourceStatus{Name: "http", Kind: SourcePushed, Events: d.Applied, Detail: d}
}

// Health is degraded while the store refuses batches (since the last refusal, until a batch is
// applied again), ok otherwise.
func (p *PushSource) Health() SourceHealth {
	if msg := p.refusal.Load(); msg != nil {
		return SourceHealth{State: component.StateDegraded, Reason: "the store refused the last pushed batch (" + *msg + "); producers resend it"}
	}
	return SourceHealth{State: component.StateOK}
}
