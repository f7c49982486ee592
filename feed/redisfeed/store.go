// Package redisfeed is the Redis feed.Cache: the seed's keys (feed.Keys), one Lua script per
// change of a user's unread state (set and count together), pipelined per batch.
package redisfeed

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/internal/groups"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/redisconn"
)

// Cache is the Redis feed.Cache. It is safe for concurrent use.
type Cache struct {
	client  redis.UniversalClient
	keys    feed.Keys
	cluster bool
	pages   redisconn.ReadCache // nil: unread pages read Redis
	// nodeGroups, when set, replaces byNode's grouping (tests: a grouping that does not match
	// the cluster's slots).
	nodeGroups func(followers []int64) [][]int64
}

var _ feed.Cache = (*Cache)(nil)

// New returns a Cache on client with keys under p (hash-tagged per user on Cluster).
func New(client redis.UniversalClient, p redstate.KeyPrefix) *Cache {
	cluster := redisconn.IsCluster(client)
	return &Cache{client: client, keys: feed.NewKeys(p, cluster), cluster: cluster}
}

// NewCached is New with UnreadPage's plain read (one ZREVRANGEBYSCORE, the common case)
// served by pages: a page costs no round trip while the follower's unread set of the author
// is unchanged. Every write of unread sets (FanOut, MarkRead, MarkAuthorRead, Unfollow,
// Rebuild) ends with pages.Sync, so this process's next page sees it; another process sees it
// once Redis's invalidation arrives.
func NewCached(client redis.UniversalClient, p redstate.KeyPrefix, pages redisconn.ReadCache) *Cache {
	c := New(client, p)
	c.pages = pages
	return c
}

// synced returns err, or after a successful write of unread sets, the cache's barrier (see
// NewCached); op names the write.
func (c *Cache) synced(ctx context.Context, err error, op string) error {
	if err != nil || c.pages == nil {
		return rediserr.Map(err, op)
	}
	return rediserr.Map(c.pages.Sync(ctx), op+": syncing the client-side cache")
}

// Keys returns the cache's key builder.
func (c *Cache) Keys() feed.Keys { return c.keys }

func ms(t time.Time) int64 { return t.UnixMilli() }

func ttlMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// postCall is the postScript call caching post.
func (c *Cache) postCall(post feed.Post) redisscript.Call {
	images, _ := json.Marshal(post.Images)
	return redisscript.Call{Keys: []string{c.keys.Post(post.ID)}, Args: []any{"post", ttlMS(feed.PostTTL),
		"id", post.ID, "user_id", post.AuthorID, "title", post.Title, "content", post.Content, "images", string(images),
		"liked", post.Liked, "create_time", post.CreateTime.UnixMicro(), "update_time", post.UpdateTime.UnixMicro()}}
}

// PutPosts implements feed.Cache.
func (c *Cache) PutPosts(ctx context.Context, posts []feed.Post) error {
	if len(posts) == 0 {
		return nil
	}
	calls := make([]redisscript.Call, len(posts))
	for i, post := range posts {
		calls[i] = c.postCall(post)
	}
	for _, cmd := range redisscript.RunPipelined(ctx, c.client, postScript, calls) {
		if err := cmd.Err(); err != nil {
			return rediserr.Map(err, "feed cache posts")
		}
	}
	return nil
}

// PublishPost implements feed.Cache: the post's cache and its author index entry, one
// postScript call each, in one pipeline.
func (c *Cache) PublishPost(ctx context.Context, post feed.Post) (bool, error) {
	index := redisscript.Call{Keys: []string{c.keys.AuthorPosts(post.AuthorID)}, Args: []any{"index", ms(post.CreateTime), post.ID}}
	cmds := redisscript.RunPipelined(ctx, c.client, postScript, []redisscript.Call{c.postCall(post), index})
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return false, rediserr.Map(err, "feed publish")
		}
	}
	n, _ := cmds[1].Int64()
	return n == 1, nil
}

// DeletePosts implements feed.Cache.
func (c *Cache) DeletePosts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Del(ctx, c.keys.Post(id)) // one DEL per key: the keys are in different slots on Cluster
		}
		return nil
	})
	return rediserr.Map(err, "feed delete posts")
}

// Ping implements feed.Cache.
func (c *Cache) Ping(ctx context.Context) error {
	return rediserr.Map(c.client.Ping(ctx).Err(), "feed ping")
}

// GetPosts implements feed.Cache.
func (c *Cache) GetPosts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	cmds, err := c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.HGetAll(ctx, c.keys.Post(id))
		}
		return nil
	})
	if err != nil {
		return nil, rediserr.Map(err, "feed get posts")
	}
	out := make(map[int64]feed.Post, len(ids))
	for i, cmd := range cmds {
		m := cmd.(*redis.MapStringStringCmd).Val()
		if len(m) == 0 {
			continue
		}
		post, ok := decodePost(m)
		if ok && post.ID == ids[i] {
			out[post.ID] = post
		}
	}
	return out, nil
}

// decodePost reads a post cache hash; ok is false for a malformed one (treated as a miss).
func decodePost(m map[string]string) (feed.Post, bool) {
	var p feed.Post
	var err error
	num := func(f string) int64 {
		if err != nil {
			return 0
		}
		var n int64
		n, err = strconv.ParseInt(m[f], 10, 64)
		return n
	}
	p.ID, p.AuthorID, p.Liked = num("id"), num("user_id"), num("liked")
	p.CreateTime, p.UpdateTime = time.UnixMicro(num("create_time")).UTC(), time.UnixMicro(num("update_time")).UTC()
	if err != nil {
		return feed.Post{}, false
	}
	p.Title, p.Content = m["title"], m["content"]
	if json.Unmarshal([]byte(m["images"]), &p.Images) != nil {
		return feed.Post{}, false
	}
	return p, true
}

// AddAuthorPost implements feed.Cache.
func (c *Cache) AddAuthorPost(ctx context.Context, author int64, ref feed.PostRef) error {
	return rediserr.Map(c.client.ZAdd(ctx, c.keys.AuthorPosts(author), redis.Z{Score: float64(ms(ref.CreateTime)), Member: ref.ID}).Err(), "feed author index")
}

// HasAuthorIndex implements feed.Cache.
func (c *Cache) HasAuthorIndex(ctx context.Context, author int64) (bool, error) {
	n, err := c.client.Exists(ctx, c.keys.AuthorPosts(author)).Result()
	return n == 1, rediserr.Map(err, "feed author index")
}

// SetAuthorIndex implements feed.Cache.
func (c *Cache) SetAuthorIndex(ctx context.Context, author int64, refs []feed.PostRef) error {
	if len(refs) == 0 {
		return nil
	}
	zs := make([]redis.Z, len(refs))
	for i, r := range refs {
		zs[i] = redis.Z{Score: float64(ms(r.CreateTime)), Member: r.ID}
	}
	return rediserr.Map(c.client.ZAdd(ctx, c.keys.AuthorPosts(author), zs...).Err(), "feed author index")
}

// AuthorPage implements feed.Cache.
func (c *Cache) AuthorPage(ctx context.Context, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	return c.page(ctx, c.keys.AuthorPosts(author), after, limit, "-inf", false)
}

// pageSlack is how many entries beyond the page the plain read fetches, so that the groups of
// equal times it must order (at the cursor, at the page's edge) usually arrive whole.
const pageSlack = 8

// page returns a page of a ZSET of post ids scored by create time (ms): with one
// ZREVRANGEBYSCORE when that read holds whole groups of equal times enough for the page (the
// common case), else with pageScript, which fetches a group whole where the page cuts it.
// cached reads the ZREVRANGEBYSCORE through the client-side cache.
func (c *Cache) page(ctx context.Context, key string, after feed.Cursor, limit int, min string, cached bool) ([]feed.PostRef, error) {
	if refs, ok, err := c.pageDirect(ctx, key, after, limit, min, cached); err != nil || ok {
		return refs, err
	}
	return c.pageByScript(ctx, key, after, limit, min)
}

// pageDirect reads up to limit+1+pageSlack entries from the cursor's time down, drops the last
// group of equal times unless the read reached the end (it may be cut), orders the rest newest
// first with ties by id descending, and skips what the cursor excludes. ok is false when that
// leaves less than a page before the end.
func (c *Cache) pageDirect(ctx context.Context, key string, after feed.Cursor, limit int, min string, cached bool) ([]feed.PostRef, bool, error) {
	max, cursorMS := "+inf", int64(0)
	if !after.IsZero() {
		cursorMS = ms(after.Time)
		max = strconv.FormatInt(cursorMS, 10)
	}
	n := limit + 1 + pageSlack
	var zs []redis.Z
	var err error
	if cached {
		zs, err = c.pages.ZRevRangeByScoreWithScores(ctx, key, max, min, int64(n))
	} else {
		zs, err = c.client.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: min, Max: max, Count: int64(n)}).Result()
	}
	if err != nil {
		return nil, false, rediserr.Map(err, "feed page")
	}
	whole := len(zs) < n // the read reached the end of the range: every group is whole
	if !whole {
		last := zs[len(zs)-1].Score
		for len(zs) > 0 && zs[len(zs)-1].Score == last {
			zs = zs[:len(zs)-1]
		}
	}
	refs := make([]feed.PostRef, 0, len(zs))
	for _, z := range zs {
		id, err := strconv.ParseInt(z.Member.(string), 10, 64)
		if err != nil {
			return nil, false, nil // not an id: the script skips it
		}
		if !after.IsZero() && int64(z.Score) == cursorMS && id >= after.ID {
			continue
		}
		refs = append(refs, feed.PostRef{ID: id, CreateTime: time.UnixMilli(int64(z.Score)).UTC()})
	}
	feed.SortNewestFirst(refs)
	if len(refs) >= limit {
		return refs[:limit], true, nil
	}
	return refs, whole, nil
}

// pageByScript runs pageScript.
func (c *Cache) pageByScript(ctx context.Context, key string, after feed.Cursor, limit int, min string) ([]feed.PostRef, error) {
	score, id := "", "0"
	if !after.IsZero() {
		score, id = strconv.FormatInt(ms(after.Time), 10), strconv.FormatInt(after.ID, 10)
	}
	r, err := pageScript.Run(ctx, c.client, []string{key}, score, id, limit, min).StringSlice()
	if err != nil {
		return nil, rediserr.Map(err, "feed page")
	}
	out := make([]feed.PostRef, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		pid, _ := strconv.ParseInt(r[i], 10, 64)
		sc, _ := strconv.ParseFloat(r[i+1], 64)
		out = append(out, feed.PostRef{ID: pid, CreateTime: time.UnixMilli(int64(sc)).UTC()})
	}
	return out, nil
}

// fanOutGroup bounds the followers one fan-out script serves.
const fanOutGroup = 100

// FanOut implements feed.Cache: up to fanOutGroup followers per script, the scripts pipelined
// (one round trip per node). The script joins each follower's unread set from
// feed.Keys.UnreadParts, so only ids cross the wire. On a standalone server any followers share
// a script. On Cluster they are grouped by the node that serves their keys (fanOutNodeScript),
// not by slot: a slot holds few followers of a large fan-out (200,000 followers over 16,384
// slots are about 12 a slot), and a script of 12 costs nearly what a script of 100 does. A
// group whose script fails (its slot moved since the grouping, or any error) is sent again
// grouped by slot (fanOutScript, routed by go-redis, which follows redirects); a follower that
// the failed script had already reached is then not counted, as in any retried fan-out.
func (c *Cache) FanOut(ctx context.Context, author int64, ref feed.PostRef, followers []int64) (int, error) {
	if len(followers) == 0 {
		return 0, nil
	}
	before, after := c.keys.UnreadParts(author)
	head := []any{before, after, strconv.FormatInt(ms(ref.CreateTime), 10), strconv.FormatInt(ref.ID, 10), ttlMS(feed.SetTTL)}
	if !c.cluster {
		added, _, err := c.fanOutGroups(ctx, fanOutScript, author, head, [][]int64{followers})
		return added, c.synced(ctx, err, "feed fan-out")
	}
	added, failed, err := c.fanOutGroups(ctx, fanOutNodeScript, author, head, c.byNode(ctx, followers))
	if len(failed) > 0 {
		var more int
		more, _, err = c.fanOutGroups(ctx, fanOutScript, author, head, c.bySlot(failed))
		added += more
	}
	return added, c.synced(ctx, err, "feed fan-out")
}

// fanOutGroups runs script for each group of followers, fanOutGroup followers per call, all
// calls in one pipeline. It returns the sets that got the post, the followers of the calls
// that failed and the first error.
func (c *Cache) fanOutGroups(ctx context.Context, script *redis.Script, author int64, head []any, byKey [][]int64) (added int, failed []int64, err error) {
	var calls []redisscript.Call
	var chunks [][]int64
	for _, users := range byKey {
		for lo := 0; lo < len(users); lo += fanOutGroup {
			chunk := users[lo:min(lo+fanOutGroup, len(users))]
			args := make([]any, len(head), len(head)+len(chunk))
			copy(args, head)
			for _, u := range chunk {
				args = append(args, u)
			}
			calls = append(calls, redisscript.Call{Keys: []string{c.keys.Unread(chunk[0], author)}, Args: args})
			chunks = append(chunks, chunk)
		}
	}
	for i, cmd := range redisscript.RunPipelined(ctx, c.client, script, calls) {
		n, cerr := cmd.Int64()
		if cerr != nil {
			err = cmp.Or(err, cerr)
			failed = append(failed, chunks[i]...)
			continue
		}
		added += int(n)
	}
	return added, failed, err
}

// byNode groups followers by the Cluster master serving their keys (a user's keys share the
// user's slot), as the client's slot map has it now; followers whose master it does not know
// form one more group (its script fails and FanOut sends them by slot).
func (c *Cache) byNode(ctx context.Context, followers []int64) [][]int64 {
	if c.nodeGroups != nil {
		return c.nodeGroups(followers)
	}
	cluster := redisconn.AsCluster(c.client)
	nodeOfSlot := map[int]*redis.Client{}
	return groups.By(followers, func(u int64) *redis.Client {
		key := c.keys.Built(u)
		slot := keyspace.Slot(key)
		node, ok := nodeOfSlot[slot]
		if !ok {
			node, _ = cluster.MasterForKey(ctx, key)
			nodeOfSlot[slot] = node
		}
		return node
	})
}

// bySlot groups followers by the slot of their keys.
func (c *Cache) bySlot(followers []int64) [][]int64 {
	return groups.By(followers, func(u int64) int { return keyspace.Slot(c.keys.Built(u)) })
}

// MarkRead implements feed.Cache: one script call (markReadScript), one round trip.
func (c *Cache) MarkRead(ctx context.Context, user, author, post int64) (bool, error) {
	n, err := markReadScript.Run(ctx, c.client, []string{c.keys.Unread(user, author)}, post, ttlMS(feed.SetTTL)).Int64()
	return n == 1, c.synced(ctx, err, "feed mark read")
}

// MarkAuthorRead implements feed.Cache.
func (c *Cache) MarkAuthorRead(ctx context.Context, user, author int64, posts []int64) (int, error) {
	if len(posts) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 1+len(posts))
	args = append(args, ttlMS(feed.SetTTL))
	for _, p := range posts {
		args = append(args, p)
	}
	n, err := markAuthorReadScript.Run(ctx, c.client, []string{c.keys.Unread(user, author)}, args...).Int64()
	return int(n), c.synced(ctx, err, "feed mark author read")
}

// Unfollow implements feed.Cache.
func (c *Cache) Unfollow(ctx context.Context, user, author int64) error {
	return c.synced(ctx, c.client.Del(ctx, c.keys.Unread(user, author)).Err(), "feed unfollow")
}

// Built implements feed.Cache.
func (c *Cache) Built(ctx context.Context, user int64) (bool, error) {
	n, err := c.client.Exists(ctx, c.keys.Built(user)).Result()
	return n == 1, rediserr.Map(err, "feed built")
}

// jsonIDs is ids as a JSON array ("[]" for none).
func jsonIDs(ids []int64) string {
	if len(ids) == 0 {
		return "[]"
	}
	js, _ := json.Marshal(ids)
	return string(js)
}

// Rebuild implements feed.Cache.
func (c *Cache) Rebuild(ctx context.Context, user int64, st feed.UserState) error {
	var all []int64
	for _, ids := range st.Read {
		all = append(all, ids...)
	}
	keys := []string{c.keys.Read(user), c.keys.Built(user)}
	replace := "0"
	if st.Replace {
		replace = "1"
	}
	args := []any{ttlMS(feed.StateTTL), strconv.FormatInt(time.Now().UnixMilli(), 10), replace, ttlMS(feed.SetTTL), jsonIDs(all), len(st.Unread)}
	for author, refs := range st.Unread {
		since := "-inf"
		if t, ok := st.Since[author]; ok {
			since = strconv.FormatInt(ms(t), 10)
		}
		entries := make([][2]int64, len(refs))
		for i, r := range refs {
			entries[i] = [2]int64{r.ID, ms(r.CreateTime)}
		}
		js, _ := json.Marshal(entries)
		if len(refs) == 0 {
			js = []byte("[]")
		}
		keys = append(keys, c.keys.Unread(user, author))
		args = append(args, since, jsonIDs(st.Read[author]), string(js))
	}
	for _, author := range st.Hybrid {
		keys = append(keys, c.keys.Unread(user, author))
	}
	return c.synced(ctx, rebuildScript.Run(ctx, c.client, keys, args...).Err(), "feed rebuild")
}

// UnreadPage implements feed.Cache: read entries (at -inf) are outside the page's range. With
// NewCached the page's read goes through the client-side cache.
func (c *Cache) UnreadPage(ctx context.Context, user, author int64, after feed.Cursor, limit int) ([]feed.PostRef, error) {
	return c.page(ctx, c.keys.Unread(user, author), after, limit, "(-inf", c.pages != nil)
}

// UnreadCounts implements feed.Cache: one script counting each author's unread set (ZCOUNT
// above -inf; the sets are in the user's slot on Cluster).
func (c *Cache) UnreadCounts(ctx context.Context, user int64, authors []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(authors))
	if len(authors) == 0 {
		return out, nil
	}
	keys := make([]string, len(authors))
	for i, a := range authors {
		keys[i] = c.keys.Unread(user, a)
	}
	ns, err := unreadCountsScript.Run(ctx, c.client, keys).Int64Slice()
	if err != nil {
		return nil, rediserr.Map(err, "feed unread counts")
	}
	for i, n := range ns {
		if n > 0 {
			out[authors[i]] = n
		}
	}
	return out, nil
}

// ReadOf implements feed.Cache: SMISMEMBER on the read set and ZMSCORE on the unread set of
// author (a read post is held there at -inf), in one pipeline (the user's keys share a slot on
// Cluster: one round trip).
func (c *Cache) ReadOf(ctx context.Context, user, author int64, posts []int64) (map[int64]bool, error) {
	out := make(map[int64]bool, len(posts))
	if len(posts) == 0 {
		return out, nil
	}
	members := make([]any, len(posts))
	for i, p := range posts {
		members[i] = strconv.FormatInt(p, 10)
	}
	var inSet *redis.BoolSliceCmd
	var held *redis.FloatSliceCmd
	if _, err := c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		inSet, held = c.readOf(ctx, p, user, author, members)
		return nil
	}); err != nil {
		return nil, rediserr.Map(err, "feed read of")
	}
	for i, read := range isRead(inSet, held) {
		if read {
			out[posts[i]] = true
		}
	}
	return out, nil
}

// readOf queues on p the commands telling which of members (post ids of author) user read:
// their membership of the read set and their scores in the unread set of author.
func (c *Cache) readOf(ctx context.Context, p redis.Pipeliner, user, author int64, members []any) (*redis.BoolSliceCmd, *redis.FloatSliceCmd) {
	inSet := p.SMIsMember(ctx, c.keys.Read(user), members...)
	scores := make([]string, len(members))
	for i, m := range members {
		scores[i] = m.(string)
	}
	return inSet, p.ZMScore(ctx, c.keys.Unread(user, author), scores...)
}

// isRead combines readOf's replies: a post is read if it is in the read set or held at -inf in
// the unread set (a missing member's score reads as 0).
func isRead(inSet *redis.BoolSliceCmd, held *redis.FloatSliceCmd) []bool {
	out := inSet.Val()
	for i, score := range held.Val() {
		if i < len(out) && math.IsInf(score, -1) {
			out[i] = true
		}
	}
	return out
}

// AddRead implements feed.Cache.
func (c *Cache) AddRead(ctx context.Context, user int64, posts []int64) error {
	if len(posts) == 0 {
		return nil
	}
	members := make([]any, len(posts))
	for i, p := range posts {
		members[i] = p
	}
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, c.keys.Read(user), members...)
		p.PExpire(ctx, c.keys.Read(user), feed.SetTTL)
		return nil
	})
	return rediserr.Map(err, "feed add read")
}

// HybridUnread implements feed.Cache: the author index from since on (one round trip), then
// which of those posts were read (ReadOf, one more); not atomic across the two, which are in
// different slots on Cluster.
func (c *Cache) HybridUnread(ctx context.Context, user, author int64, since time.Time, after feed.Cursor, limit int) (int64, []feed.PostRef, error) {
	zs, err := c.client.ZRevRangeByScoreWithScores(ctx, c.keys.AuthorPosts(author), &redis.ZRangeBy{Min: strconv.FormatInt(ms(since), 10), Max: "+inf"}).Result()
	if err != nil {
		return 0, nil, rediserr.Map(err, "feed hybrid unread")
	}
	ids := make([]int64, 0, len(zs))
	refs := make([]feed.PostRef, 0, len(zs))
	for _, z := range zs {
		id, err := strconv.ParseInt(z.Member.(string), 10, 64)
		if err != nil {
			return 0, nil, redstate.Errorf(redstate.EINTERNAL, "author index member %q is not an id", z.Member)
		}
		ids = append(ids, id)
		refs = append(refs, feed.PostRef{ID: id, CreateTime: time.UnixMilli(int64(z.Score)).UTC()})
	}
	read, err := c.ReadOf(ctx, user, author, ids)
	if err != nil {
		return 0, nil, err
	}
	return feed.HybridPage(refs, read, after, limit)
}

// HybridCounts implements feed.Cache: EXISTS and the index from the follow on of every author
// in one pipeline, then per author SMISMEMBER on the read set and ZMSCORE on the unread set
// (readOf) in another (on Cluster each pipeline is split per node, the parts sent in parallel).
func (c *Cache) HybridCounts(ctx context.Context, user int64, since map[int64]time.Time) (map[int64]int64, []int64, error) {
	counts := map[int64]int64{}
	if len(since) == 0 {
		return counts, nil, nil
	}
	authors := slices.Sorted(maps.Keys(since))
	cmds, err := c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range authors {
			p.Exists(ctx, c.keys.AuthorPosts(a))
			p.ZRangeByScore(ctx, c.keys.AuthorPosts(a), &redis.ZRangeBy{Min: strconv.FormatInt(ms(since[a]), 10), Max: "+inf"})
		}
		return nil
	})
	if err != nil {
		return nil, nil, rediserr.Map(err, "feed hybrid counts")
	}
	var missing, listed []int64
	var posts [][]any
	for i, a := range authors {
		if cmds[2*i].(*redis.IntCmd).Val() == 0 {
			missing = append(missing, a)
			continue
		}
		ids := cmds[2*i+1].(*redis.StringSliceCmd).Val()
		if len(ids) == 0 {
			continue
		}
		members := make([]any, len(ids))
		for j, id := range ids {
			members[j] = id
		}
		listed, posts = append(listed, a), append(posts, members)
	}
	if len(listed) == 0 {
		return counts, missing, nil
	}
	inSet := make([]*redis.BoolSliceCmd, len(listed))
	held := make([]*redis.FloatSliceCmd, len(listed))
	_, err = c.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, members := range posts {
			inSet[i], held[i] = c.readOf(ctx, p, user, listed[i], members)
		}
		return nil
	})
	if err != nil {
		return nil, nil, rediserr.Map(err, "feed hybrid counts")
	}
	for i, a := range listed {
		for _, read := range isRead(inSet[i], held[i]) {
			if !read {
				counts[a]++
			}
		}
	}
	return counts, missing, nil
}
