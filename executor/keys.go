package executor

import (
	"strings"
	"unicode"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// Keys builds every Redis key of the executor's state. It is the only place that does.
//
// Layout (N = namespace, "executor" by default; ids validated by ValidateID):
//
//	N:ckpt:<taskId>                         String, checkpoint JSON (version first), 7 d
//	N:task:<taskId>                         Hash, task projection, 30 d
//	N:plan:<planId>                         Hash, plan projection, 30 d
//	N:index:tenant:<tenantId>               String, the tenant's current taskId, 30 d
//	N:lock:tenant:<tenantId>                String, the lock holder's token, lease TTL
//	N:fence:{<tag>}:tenant:<tenantId>       String, the tenant's fencing counter, 30 d after the last lock
//	N:alive:<instanceId>                    String, a runner instance's liveness, liveness TTL
//	N:owners                                Hash, taskId -> instance running it (runtime)
//	N:control:<instanceId>                  List, control commands for an instance, 1 min
//	N:claim:plan:<planId>                   String, claim token of a plan id, 30 d
//	N:claim:task:<taskId>                   String, claim token of a task id, 30 d
//
// The seed's key names are kept verbatim on every topology. The lock and its fencing counter
// are written by one script, so on Redis Cluster they must share a slot; the lock key carries
// no hash tag (its name is the seed's), so the fence key carries tag = keyspace.SlotTag of the
// lock key's slot, which puts it in exactly that slot. The fence lives under its own ":fence:"
// segment, never as a suffix of the lock key: ids may contain ':', so a suffix scheme
// ("N:lock:tenant:<t>:fence") would collide with the lock of tenant "<t>:fence".
type Keys struct {
	ns string
}

// NewKeys returns the key builder under p: the deployment's namespace (e.g. "prod-" gives
// "prod-executor:task:<taskId>", so that environments sharing a Redis never share the
// executor's plans, tasks or tenant locks) and the executor's own prefix (DefaultNamespace when
// empty). The executor's prefix follows the id rules (no braces, so no hash tag can sneak in);
// the namespace must hold no whitespace, control, glob ("* ? [ ] \") or brace characters (it
// becomes part of SCAN patterns and must not bring a hash tag). Errors: EINVALID.
func NewKeys(p redstate.KeyPrefix) (Keys, error) {
	p = p.Or(DefaultNamespace)
	if err := ValidateID("namespace", p.Block); err != nil {
		return Keys{}, redstate.Wrap(redstate.EINVALID, err, "executor keys")
	}
	if strings.ContainsFunc(p.Namespace, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`*?[]\{}`, r)
	}) {
		return Keys{}, redstate.Errorf(redstate.EINVALID, "executor keys: key prefix %q holds whitespace, glob or brace characters", p.Namespace)
	}
	return Keys{ns: p.String()}, nil
}

// MustKeys is NewKeys that panics on an invalid prefix (for constants and tests).
func MustKeys(p redstate.KeyPrefix) Keys {
	k, err := NewKeys(p)
	if err != nil {
		panic(err)
	}
	return k
}

// Namespace returns the namespace (with defaults applied; "" for the zero Keys).
func (k Keys) Namespace() string { return k.ns }

// IsZero reports whether k is the zero Keys (no namespace chosen yet).
func (k Keys) IsZero() bool { return k.ns == "" }

// Checkpoint returns "N:ckpt:<taskId>".
func (k Keys) Checkpoint(taskID string) string { return k.ns + ":ckpt:" + taskID }

// Task returns "N:task:<taskId>", the task projection hash.
func (k Keys) Task(taskID string) string { return k.ns + ":task:" + taskID }

// Plan returns "N:plan:<planId>", the plan projection hash.
func (k Keys) Plan(planID string) string { return k.ns + ":plan:" + planID }

// TenantIndex returns "N:index:tenant:<tenantId>".
func (k Keys) TenantIndex(tenantID string) string { return k.ns + ":index:tenant:" + tenantID }

// TenantLock returns "N:lock:tenant:<tenantId>".
func (k Keys) TenantLock(tenantID string) string { return k.ns + ":lock:tenant:" + tenantID }

// TenantFence returns the tenant's fencing-counter key, in the same Cluster slot as
// TenantLock(tenantID): "N:fence:{<tag>}:tenant:<tenantId>".
func (k Keys) TenantFence(tenantID string) string {
	tag := keyspace.SlotTag(keyspace.Slot(k.TenantLock(tenantID)))
	return k.ns + ":fence:{" + tag + "}:tenant:" + tenantID
}

// Pattern returns the SCAN MATCH pattern of every key of one kind ("ckpt", "task", "plan",
// "index:tenant", "lock:tenant", "fence"), with the namespace glob-escaped.
func (k Keys) Pattern(kind string) string { return keyspace.GlobEscape(k.ns+":"+kind+":") + "*" }

// Spec returns "N:spec:<taskId>", the task spec (String, JSON; runtime addition, see
// TaskRegistry).
func (k Keys) Spec(taskID string) string { return k.ns + ":spec:" + taskID }

// Alive returns "N:alive:<instanceId>": present while the runner instance renews it.
func (k Keys) Alive(instance string) string { return k.ns + ":alive:" + instance }

// Control returns "N:control:<instanceId>", the control inbox of a runner instance.
func (k Keys) Control(instance string) string { return k.ns + ":control:" + instance }

// Owners returns "N:owners", the Hash of running task id -> instance running it.
func (k Keys) Owners() string { return k.ns + ":owners" }

// ClaimPlan returns "N:claim:plan:<planId>": the plan id is taken while it exists (runtime
// addition, see TaskRegistry.ClaimIDs).
func (k Keys) ClaimPlan(planID string) string { return k.ns + ":claim:plan:" + planID }

// ClaimTask returns "N:claim:task:<taskId>": the task id is taken while it exists.
func (k Keys) ClaimTask(taskID string) string { return k.ns + ":claim:task:" + taskID }

// Running returns "N:running", the Set of the ids of tasks whose projection is RUNNING
// (runtime addition, see TaskRegistry; the orphan scan reads it instead of SCANning).
func (k Keys) Running() string { return k.ns + ":running" }
