package feed

import (
	"strconv"

	"github.com/redstate/redstate"
)

// Keys builds every Redis key of the feed, in one place (layout v2, docs/feed.md, Keys):
//
//	blog:info:{blogId}                   Hash   post cache (TTL 7 d)
//	author:blogs:{authorId}              ZSET   author index: post id → create time (ms); no TTL
//	user:read:{userId}                   Set    posts the user read, as of the last rebuild
//	                                            (TTL 30 d + 1 h)
//	user:unread:v2:{userId}:{authorId}   ZSET   the user's unread posts of the author → create
//	                                            time (ms); read posts and the marker "" at -inf
//	                                            (TTL 30 d + 1 h)
//	user:built:v2:{userId}               String when the user's state was built from SQL (TTL 30 d)
//
// A count is the number of entries of an unread set above -inf (ZCOUNT), not a structure of its
// own. Read posts stay in the set at -inf, so that a fan-out after the read (ZADD NX) does not add
// them again; the marker "" (at -inf) is added with every ZADD that may create the set, and a ZADD
// that reports it added too created the set, which then gets its TTL. The first layout's counts
// hash (user:unread:count:{userId}) and the v1 unread sets (user:unread:{userId}:{authorId},
// without read entries) are not read: docs/feed.md, "Layout v2".
//
// On a standalone or Sentinel server the user id goes in as it is ("user:read:1001"); on
// Cluster a user's keys carry the user id as hash tag ("user:read:{1001}",
// "user:unread:v2:{2001}:1001", "user:built:v2:{2001}") so that one script can change a user's
// keys together. Ids are integers, so no user text reaches a key. Prefix (default "") is put
// before every key.
type Keys struct {
	prefix  string
	cluster bool
}

// NewKeys returns the keys under p (the namespace and the feed's key prefix, both may be empty)
// for a standalone (cluster false) or Cluster server.
func NewKeys(p redstate.KeyPrefix, cluster bool) Keys {
	return Keys{prefix: p.String(), cluster: cluster}
}

// Events is the Pub/Sub channel that carries count notifications between instances.
func (k Keys) Events() string { return k.prefix + "feed:events" }

// tag returns the opening and closing text around a user id in a user's keys.
func (k Keys) tag() (string, string) {
	if k.cluster {
		return "{", "}"
	}
	return "", ""
}

func (k Keys) user(u int64) string {
	open, close := k.tag()
	return open + strconv.FormatInt(u, 10) + close
}

// Post is the post cache hash of post id.
func (k Keys) Post(id int64) string { return k.prefix + "blog:info:" + strconv.FormatInt(id, 10) }

// AuthorPosts is the author index of author.
func (k Keys) AuthorPosts(author int64) string {
	return k.prefix + "author:blogs:" + strconv.FormatInt(author, 10)
}

// Read is user's read set.
func (k Keys) Read(user int64) string { return k.prefix + "user:read:" + k.user(user) }

// Unread is user's unread set of author's posts.
func (k Keys) Unread(user, author int64) string {
	before, after := k.UnreadParts(author)
	return before + strconv.FormatInt(user, 10) + after
}

// UnreadParts returns what goes before and after a user id in the users' unread sets of
// author: Unread(u, author) is before + u + after. The fan-out script joins the keys from them,
// so that one id per follower crosses the wire instead of a key.
func (k Keys) UnreadParts(author int64) (before, after string) {
	open, close := k.tag()
	return k.prefix + "user:unread:v2:" + open, close + ":" + strconv.FormatInt(author, 10)
}

// Built is user's built marker: it exists while the user's state built from SQL is valid.
func (k Keys) Built(user int64) string { return k.prefix + "user:built:v2:" + k.user(user) }
