package feed

import "strconv"

// Keys builds every Redis key of the feed, in one place (seed 4.1):
//
//	blog:info:{blogId}                Hash   post cache (TTL 7 d)
//	author:blogs:{authorId}           ZSET   author index: post id → create time (ms); no TTL
//	user:read:{userId}                Set    posts the user read (TTL 30 d)
//	user:unread:{userId}:{authorId}   ZSET   the user's unread posts of the author → create time (TTL 30 d)
//	user:unread:count:{userId}        Hash   author id → unread count, plus "_built" (TTL 30 d)
//
// On a standalone or Sentinel server the seed's names are used as they are ("user:read:1001");
// on Cluster a user's keys carry the user id as hash tag ("user:read:{1001}",
// "user:unread:{2001}:1001", "user:unread:count:{2001}") so that one script can change a
// user's read set, unread set and counts together. Ids are integers, so no user text reaches a
// key. Prefix (default "") is put before every key.
type Keys struct {
	prefix  string
	cluster bool
}

// NewKeys returns the keys under prefix for a standalone (cluster false) or Cluster server.
func NewKeys(prefix string, cluster bool) Keys { return Keys{prefix: prefix, cluster: cluster} }

func (k Keys) user(u int64) string {
	s := strconv.FormatInt(u, 10)
	if k.cluster {
		return "{" + s + "}"
	}
	return s
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
	return k.prefix + "user:unread:" + k.user(user) + ":" + strconv.FormatInt(author, 10)
}

// Counts is user's unread counts hash.
func (k Keys) Counts(user int64) string { return k.prefix + "user:unread:count:" + k.user(user) }

// ScriptParts are the pieces a script joins into a user's keys, for scripts that take user ids
// instead of keys (the fan-out): read key = ReadPrefix + TagOpen + id + TagClose, unread key =
// UnreadPrefix + TagOpen + id + TagClose + ":" + author, counts key = CountsPrefix + TagOpen +
// id + TagClose; the same keys Read, Unread and Counts return.
type ScriptParts struct {
	ReadPrefix, UnreadPrefix, CountsPrefix string
	TagOpen, TagClose                      string
}

// ScriptParts returns the parts of the user keys for scripts.
func (k Keys) ScriptParts() ScriptParts {
	p := ScriptParts{ReadPrefix: k.prefix + "user:read:", UnreadPrefix: k.prefix + "user:unread:", CountsPrefix: k.prefix + "user:unread:count:"}
	if k.cluster {
		p.TagOpen, p.TagClose = "{", "}"
	}
	return p
}

// BuiltField is the field of the counts hash saying the user's unread state was built from
// SQL (absent: rebuild before answering from Redis).
const BuiltField = "_built"
