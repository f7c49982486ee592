package resilientstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// flaky is a test-only Store wrapper that fails every call with EUNAVAILABLE while down is set,
// standing in for an unreachable Redis.
type flaky struct {
	buildstatus.Store
	down  atomic.Bool
	calls atomic.Int64 // calls that reached the wrapper (let through by the breaker)
}

func (f *flaky) fail() error {
	f.calls.Add(1)
	if f.down.Load() {
		return redstate.Errorf(redstate.EUNAVAILABLE, "flaky: redis is down")
	}
	return nil
}

func (f *flaky) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.Save(ctx, doc, opts)
}

func (f *flaky) Get(ctx context.Context, id string) (*buildstatus.Build, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, id)
}

func (f *flaky) GetMany(ctx context.Context, ids []string) (map[string]*buildstatus.Build, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.GetMany(ctx, ids)
}

func (f *flaky) Exists(ctx context.Context, id string) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.Store.Exists(ctx, id)
}

func (f *flaky) TTL(ctx context.Context, id string) (time.Duration, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return f.Store.TTL(ctx, id)
}

func (f *flaky) Delete(ctx context.Context, id, ifMatch string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Store.Delete(ctx, id, ifMatch)
}

func (f *flaky) UpdatePlatform(ctx context.Context, id string, r *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.UpdatePlatform(ctx, id, r, ifMatch)
}

func (f *flaky) List(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, cursor, limit)
}

func (f *flaky) ListProject(ctx context.Context, p, cursor string, limit int) (*buildstatus.Page, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.ListProject(ctx, p, cursor, limit)
}

func (f *flaky) Watch(ctx context.Context, id string) (<-chan buildstatus.Event, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.Store.Watch(ctx, id)
}
