package redisconn

import (
	"fmt"
	"time"
)

// CacheOptions configure server-assisted client-side caching (the configuration section
// redis.client-cache): designated reads (build documents, index condition hashes) are served
// from process memory that Redis invalidates (RESP3 CLIENT TRACKING). Off by default; see
// docs/architecture.md "Client-side cache" for what may be cached and the staleness bound.
type CacheOptions struct {
	// Enabled turns the cache on (default false).
	Enabled bool `koanf:"enabled"`
	// Size bounds the cached bytes per Redis node (default 64 MiB): the cache holds one
	// connection per node, so the process holds at most Size times the number of nodes.
	Size int `koanf:"size"`
	// TTL is the longest a value stays cached without being read from Redis again (default
	// 1m); a key's own expiry shortens it.
	TTL time.Duration `koanf:"ttl"`
	// OwnWriteWindow is how long after this process writes a key its cached reads of that key
	// go to Redis instead (default 1s), so a process always reads its own acknowledged writes
	// even before Redis's invalidation reaches its cache.
	OwnWriteWindow time.Duration `koanf:"own-write-window"`
}

// Defaults of CacheOptions.
const (
	DefaultCacheSize           = 64 << 20
	DefaultCacheTTL            = time.Minute
	DefaultCacheOwnWriteWindow = time.Second
)

// DefaultCacheOptions returns the cache's defaults (off).
func DefaultCacheOptions() CacheOptions {
	return CacheOptions{Size: DefaultCacheSize, TTL: DefaultCacheTTL, OwnWriteWindow: DefaultCacheOwnWriteWindow}
}

// validate appends one error per problem of c, each naming its key.
func (c CacheOptions) validate(add func(key, format string, args ...any)) {
	if c.Size < 0 {
		add("redis.client-cache.size", "must not be negative, got %d (0 means %d bytes)", c.Size, DefaultCacheSize)
	} else if c.Size > 0 && c.Size < 1<<20 {
		add("redis.client-cache.size", "must be at least 1 MiB (1048576 bytes), got %d", c.Size)
	}
	if c.TTL < 0 || (c.TTL > 0 && c.TTL < time.Millisecond) {
		add("redis.client-cache.ttl", "must be at least 1ms, got %s (0 means %s)", c.TTL, DefaultCacheTTL)
	}
	if c.OwnWriteWindow < 0 {
		add("redis.client-cache.own-write-window", "must not be negative, got %s (0 means %s)", c.OwnWriteWindow, DefaultCacheOwnWriteWindow)
	}
}

// withDefaults fills zero fields with the defaults.
func (c CacheOptions) withDefaults() CacheOptions {
	d := DefaultCacheOptions()
	if c.Size == 0 {
		c.Size = d.Size
	}
	if c.TTL == 0 {
		c.TTL = d.TTL
	}
	if c.OwnWriteWindow == 0 {
		c.OwnWriteWindow = d.OwnWriteWindow
	}
	return c
}

// String describes c for logs.
func (c CacheOptions) String() string {
	if !c.Enabled {
		return "off"
	}
	c = c.withDefaults()
	return fmt.Sprintf("on (%d MiB per node, ttl %s)", c.Size>>20, c.TTL)
}
