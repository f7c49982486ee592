package history

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
)

// RedisStore keeps the history in Redis, shared by every instance of the namespace (Keys): a
// hash per tier and bucket expiring (EXPIREAT) at its start plus the tier's retention, and the
// registry of series. A Write is one pipeline: per bucket written one HINCRBY per counted
// field, one HSET of the gauges and the up mark, and one EXPIREAT; plus one HSET of the
// registry.
type RedisStore struct {
	client redis.UniversalClient
	keys   Keys
	now    func() time.Time
}

// NewRedisStore returns the store on client under keys' prefix. now (nil: time.Now) decides
// which buckets are already expired and so not written; Redis expires the others itself.
func NewRedisStore(client redis.UniversalClient, keys Keys, now func() time.Time) *RedisStore {
	if now == nil {
		now = time.Now
	}
	return &RedisStore{client: client, keys: keys, now: now}
}

// Write implements Store.
func (s *RedisStore) Write(ctx context.Context, b Batch) error {
	plan := b.plan(s.now().Unix())
	if len(plan) == 0 && len(b.Seen) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, w := range plan {
			key := s.keys.Bucket(w.tier, w.start)
			for field, n := range w.incr {
				p.HIncrBy(ctx, key, field, n)
			}
			set := make([]any, 0, 2*len(w.set)+2)
			for field, v := range w.set {
				set = append(set, field, strconv.FormatFloat(v, 'g', -1, 64))
			}
			if w.up {
				set = append(set, upField, "1")
			}
			if len(set) > 0 {
				p.HSet(ctx, key, set...)
			}
			p.ExpireAt(ctx, key, time.Unix(w.tier.expiresAt(w.start), 0))
		}
		if len(b.Seen) > 0 {
			seen := make([]any, 0, 2*len(b.Seen))
			for field, sec := range b.Seen {
				seen = append(seen, field, sec)
			}
			p.HSet(ctx, s.keys.Series(), seen...)
			p.Expire(ctx, s.keys.Series(), time.Duration(seriesRetention)*time.Second)
		}
		return nil
	})
	return rediserr.Map(err, "history write")
}

// Read implements Store: one pipeline of an HMGET per bucket, or of an HGETALL per bucket when
// whole is true.
func (s *RedisStore) Read(ctx context.Context, t Tier, from, to int64, fields []string, whole bool) ([]map[string]float64, error) {
	if len(fields) == 0 || to < from {
		return make([]map[string]float64, max(0, (to-from)/t.Step+1)), nil
	}
	var gets []*redis.SliceCmd
	var alls []*redis.MapStringStringCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for start := from; start <= to; start += t.Step {
			if whole {
				alls = append(alls, p.HGetAll(ctx, s.keys.Bucket(t, start)))
			} else {
				gets = append(gets, p.HMGet(ctx, s.keys.Bucket(t, start), fields...))
			}
		}
		return nil
	})
	if err != nil {
		return nil, rediserr.Map(err, "history read")
	}
	out := make([]map[string]float64, 0, len(gets)+len(alls))
	parse := func(got map[string]float64, field, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return redstate.Wrap(redstate.EINTERNAL, err, "history read: field "+strconv.Quote(field))
		}
		got[field] = f
		return nil
	}
	for _, c := range gets {
		got := map[string]float64{}
		for j, v := range c.Val() {
			if str, ok := v.(string); ok {
				if err := parse(got, fields[j], str); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, got)
	}
	if len(alls) > 0 {
		wanted := make(map[string]bool, len(fields))
		for _, f := range fields {
			wanted[f] = true
		}
		for _, c := range alls {
			got := map[string]float64{}
			for field, v := range c.Val() {
				if wanted[field] {
					if err := parse(got, field, v); err != nil {
						return nil, err
					}
				}
			}
			out = append(out, got)
		}
	}
	return out, nil
}

// Series implements Store: it also deletes the series not written for a day.
func (s *RedisStore) Series(ctx context.Context) (map[string]int64, error) {
	all, err := s.client.HGetAll(ctx, s.keys.Series()).Result()
	if err != nil {
		return nil, rediserr.Map(err, "history series")
	}
	now := s.now().Unix()
	out := make(map[string]int64, len(all))
	var stale []string
	for field, v := range all {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec+seriesRetention <= now {
			stale = append(stale, field)
			continue
		}
		out[field] = sec
	}
	if len(stale) > 0 {
		if err := s.client.HDel(ctx, s.keys.Series(), stale...).Err(); err != nil {
			return nil, rediserr.Map(err, "history series")
		}
	}
	return out, nil
}

// Usage implements Store: one pipeline of MEMORY USAGE over every bucket a tier may hold now
// and the registry (about 2,700 keys), so callers cache it.
func (s *RedisStore) Usage(ctx context.Context) (Usage, error) {
	now := s.now().Unix()
	var cmds []*redis.IntCmd
	var series *redis.IntCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range Tiers {
			last := t.Start(now)
			for start := last; t.expiresAt(start) > now; start -= t.Step {
				cmds = append(cmds, p.MemoryUsage(ctx, s.keys.Bucket(t, start)))
			}
		}
		cmds = append(cmds, p.MemoryUsage(ctx, s.keys.Series()))
		series = p.HLen(ctx, s.keys.Series())
		return nil
	})
	if err != nil && err != redis.Nil {
		return Usage{}, rediserr.Map(err, "history usage")
	}
	var u Usage
	for _, c := range cmds {
		if n, err := c.Result(); err == nil {
			u.Buckets++
			u.Bytes += n
		}
	}
	u.Series = series.Val()
	return u, nil
}
