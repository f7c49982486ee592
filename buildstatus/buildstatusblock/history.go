package buildstatusblock

import (
	"context"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/history"
)

// countingStore is the registry with every build event counted in the statistics history
// (builds.events): a save, a platform result and a delete that succeed. Reads are the store's.
type countingStore struct {
	buildstatus.Store
	history *history.Recorder
}

// withHistory is s, counting its events into rec when rec is not nil.
func withHistory(s buildstatus.Store, rec *history.Recorder) buildstatus.Store {
	if rec == nil {
		return s
	}
	return countingStore{Store: s, history: rec}
}

// count adds one build event when err is nil.
func (s countingStore) count(err error) {
	if err == nil {
		s.history.Add(history.BuildsEvents, 1)
	}
}

// Save implements buildstatus.Store.
func (s countingStore) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	b, err := s.Store.Save(ctx, doc, opts)
	s.count(err)
	return b, err
}

// Delete implements buildstatus.Store.
func (s countingStore) Delete(ctx context.Context, buildID, ifMatch string) error {
	err := s.Store.Delete(ctx, buildID, ifMatch)
	s.count(err)
	return err
}

// UpdatePlatform implements buildstatus.Store.
func (s countingStore) UpdatePlatform(ctx context.Context, buildID string, result *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	b, err := s.Store.UpdatePlatform(ctx, buildID, result, ifMatch)
	s.count(err)
	return b, err
}
