package feed

import (
	"context"
	"time"

	"github.com/redstate/redstate"
)

// Kinds of repair marks (Source.MarkRepair): which part of the Redis state may have missed a
// write that SQL has.
const (
	// RepairUser: the user's unread state (read set, unread sets, counts) is rebuilt from SQL
	// (a read, mark-all-read, follow or unfollow missed Redis).
	RepairUser = "user"
	// RepairPost: the post is added to its author's index, its cache is refreshed and it is
	// fanned out again (a publish or a fan-out missed Redis).
	RepairPost = "post"
	// RepairAuthor: the author's index is merged from SQL (building it missed Redis).
	RepairAuthor = "author"
	// RepairPostCache: the post's cache is deleted and refilled from SQL (a like or unlike
	// could not delete it).
	RepairPostCache = "post-cache"
)

// ValidRepairKind checks a repair kind. Errors: EINVALID.
func ValidRepairKind(kind string) error {
	switch kind {
	case RepairUser, RepairPost, RepairAuthor, RepairPostCache:
		return nil
	}
	return redstate.Errorf(redstate.EINVALID, "unknown feed repair kind %q", kind)
}

// Repair is one durable repair mark: Kind and ID name what to repair, Gen is the mark's
// generation (renewed when the same thing is marked again).
type Repair struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id"`
	Gen  int64  `json:"gen"`
}

// DefaultRepairInterval is how often Run looks for repair marks when Options.RepairInterval is
// zero.
const DefaultRepairInterval = 2 * time.Second

// repairBatch is how many marks one SQL read of RepairOnce takes, maxRepairBatches how many
// reads one round makes at most (the rest waits for the next round).
const (
	repairBatch      = 100
	maxRepairBatches = 50
)

// repairLater logs a Redis write that failed (or a fan-out that did not run) and marks what it
// should have changed durably in SQL, so that Run repairs it when Redis answers, also after
// this process died.
func (s *Service) repairLater(ctx context.Context, kind string, id int64, op string, err error) {
	s.log.Warn("feed: a write did not reach Redis; SQL has it, the Redis state will be repaired when Redis answers",
		"op", op, "repair", kind, "id", id, "err", err)
	// The mark must be written even if the request's context ended: the SQL write happened.
	if merr := s.src.MarkRepair(context.WithoutCancel(ctx), kind, id); merr != nil {
		s.log.Error("feed: could not record a repair mark; run `redstate feed rebuild --yes` after Redis returns",
			"repair", kind, "id", id, "err", merr)
	}
}

// repairIfCut marks kind id for repair when a SQL write failed after ctx ended: the write may
// have committed all the same (the SQLite driver reports the ended context also after a commit
// it could not interrupt), and Redis was not updated.
func (s *Service) repairIfCut(ctx context.Context, err error, kind string, id int64, op string) {
	if err != nil && ctx.Err() != nil {
		s.repairLater(ctx, kind, id, op, err)
	}
}

// Run repairs, every Options.RepairInterval until ctx ends, what the durable repair marks name
// (RepairOnce), and returns nil. With a breaker its ping is the background probe that closes
// it again after an outage.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.RepairInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := s.RepairOnce(ctx); err != nil {
			s.log.Debug("feed: repair waits for Redis", "repaired", n, "err", err)
		} else if n > 0 {
			s.log.Info("feed: repaired the Redis state after missed writes", "repaired", n)
		}
	}
}

// RepairOnce probes the cache (closing the breaker if Redis answers again) and, if it answers, repairs what every repair mark names and
// removes the mark; it stops at the first failure (the mark stays). It returns how many marks
// it repaired. Errors: EUNAVAILABLE (Redis or SQL).
func (s *Service) RepairOnce(ctx context.Context) (int, error) {
	if err := s.probe(ctx); err != nil {
		return 0, err
	}
	done := 0
	for range maxRepairBatches {
		marks, err := s.src.Repairs(ctx, repairBatch)
		if err != nil {
			return done, err
		}
		progress := false
		for _, r := range marks {
			if err := s.repair(ctx, r); err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) && !redstate.IsCode(err, redstate.EINVALID) {
				return done, err
			}
			if err := s.src.RepairDone(ctx, r); err != nil {
				return done, err
			}
			done++
			progress = true
		}
		if len(marks) < repairBatch || !progress {
			return done, nil
		}
	}
	return done, nil // the rest next round
}

// repair brings the Redis state r names in line with SQL.
func (s *Service) repair(ctx context.Context, r Repair) error {
	switch r.Kind {
	case RepairUser:
		return s.mergeUser(ctx, r.ID)
	case RepairAuthor:
		return s.mergeAuthorIndex(ctx, r.ID)
	case RepairPostCache:
		return s.refreshPosts(ctx, []int64{r.ID})
	case RepairPost:
		posts, err := s.src.Posts(ctx, []int64{r.ID})
		if err != nil {
			return err
		}
		p, ok := posts[r.ID]
		if !ok {
			return nil
		}
		if err := s.ensureAuthorIndex(ctx, p.AuthorID); err != nil {
			return err
		}
		if err := s.cache.AddAuthorPost(ctx, p.AuthorID, PostRef{ID: p.ID, CreateTime: p.CreateTime}); err != nil {
			return err
		}
		if err := s.refreshPosts(ctx, []int64{p.ID}); err != nil {
			return err
		}
		return s.fanOut(ctx, p)
	}
	return ValidRepairKind(r.Kind)
}
