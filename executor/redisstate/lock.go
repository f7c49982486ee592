package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TenantLocks = (*Locks)(nil)

// Locks is the Redis executor.TenantLocks. The lock is the String Keys.TenantLock(tenant)
// holding the holder's token with a PX TTL (SET NX PX); the fencing counter is
// Keys.TenantFence(tenant), in the same Cluster slot, with executor.FenceTTL. A fence is the
// larger of the counter plus one and the server clock in microseconds (acquireScript), so it
// grows across a failover that lost the counter's last writes. Acquire, release and renew are
// one script call each.
//
// The scripts go through the client's blocking autopipeliner (go-redis AutoPipeline, shared by
// everything that asks the client for it and stopped when the client closes): the calls of
// concurrent callers are written to Redis in one pipeline and their replies read back in one
// read, which saves system calls on both sides; each caller still waits for its own reply, so a
// call takes one round trip as before. Options.DirectLocks sends each script on the client
// itself instead. Exists and Holder always use the client.
type Locks struct {
	base
	// scripts runs acquireScript, deleteIfScript and renewIfScript: the client's autopipeliner,
	// or the client itself with Options.DirectLocks.
	scripts redis.Scripter
}

// NewLocks returns the lock manager on client. Errors: EINVALID (also when the client cannot
// give an autopipeliner, e.g. it is closed).
func NewLocks(client redis.UniversalClient, opts Options) (*Locks, error) {
	b, err := newBase(client, opts, executor.DefaultLockTTL, "tenant locks")
	if err != nil {
		return nil, err
	}
	if opts.DirectLocks {
		return &Locks{base: b, scripts: client}, nil
	}
	ap, err := client.AutoPipeline()
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "redisstate: tenant locks: the client gives no autopipeliner (set DirectLocks)")
	}
	return &Locks{base: b, scripts: ap}, nil
}

// run runs script on l.scripts. A context already done fails at once, as on the client. One
// that ends while the script waits in the autopipeliner does not cut the call short: the
// autopipeliner runs commands on its own context, so the call returns when the reply is in or
// the client's read or write timeout ends it (go-redis: per-command deadlines are not honored
// once a command is queued).
func (l *Locks) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if err := ctx.Err(); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return script.Run(ctx, l.scripts, keys, args...)
}

// TryAcquire implements executor.TenantLocks (acquireScript).
func (l *Locks) TryAcquire(ctx context.Context, tenantID, owner string, ttl time.Duration) (executor.Lease, bool, error) {
	if err := executor.ValidateLockArgs(tenantID, owner, ttl); err != nil {
		return executor.Lease{}, false, err
	}
	token := executor.NewLockToken(owner)
	sent := l.now()
	fence, err := l.run(ctx, acquireScript,
		[]string{l.keys.TenantLock(tenantID), l.keys.TenantFence(tenantID)}, token, ms(ttl), ms(executor.FenceTTL(ttl))).Int64()
	if err != nil {
		return executor.Lease{}, false, mapErr(err, "acquire tenant lock")
	}
	if fence == 0 {
		return executor.Lease{}, false, nil
	}
	return executor.Lease{Tenant: tenantID, Owner: owner, Token: token, Fence: fence, ExpiresAt: sent.Add(ttl)}, true, nil
}

// Release implements executor.TenantLocks (deleteIfScript).
func (l *Locks) Release(ctx context.Context, tenantID, token string) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	n, err := l.run(ctx, deleteIfScript, []string{l.keys.TenantLock(tenantID)}, token).Int()
	if err != nil {
		return mapErr(err, "release tenant lock")
	}
	if n != 1 {
		return notOwner(tenantID)
	}
	return nil
}

// Renew implements executor.TenantLocks (renewIfScript).
func (l *Locks) Renew(ctx context.Context, tenantID, token string, ttl time.Duration) error {
	if err := checkToken(tenantID, token); err != nil {
		return err
	}
	if err := executor.ValidateLockTTL(ttl); err != nil {
		return err
	}
	n, err := l.run(ctx, renewIfScript, []string{l.keys.TenantLock(tenantID)}, token, ms(ttl)).Int()
	if err != nil {
		return mapErr(err, "renew tenant lock")
	}
	if n != 1 {
		return notOwner(tenantID)
	}
	return nil
}

// Exists implements executor.TenantLocks.
func (l *Locks) Exists(ctx context.Context, tenantID string) (bool, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return false, err
	}
	n, err := l.client.Exists(ctx, l.keys.TenantLock(tenantID)).Result()
	if err != nil {
		return false, mapErr(err, "tenant lock exists")
	}
	return n == 1, nil
}

// Holder implements executor.TenantLocks: one GET.
func (l *Locks) Holder(ctx context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	v, err := l.client.Get(ctx, l.keys.TenantLock(tenantID)).Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", mapErr(err, "tenant lock holder")
	}
	return v, nil
}

func checkToken(tenantID, token string) error {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return err
	}
	return executor.ValidateToken(token)
}

func notOwner(tenantID string) error {
	return redstate.Errorf(redstate.ECONFLICT, "tenant lock %s is not held by this token (released, expired or taken)", tenantID)
}
