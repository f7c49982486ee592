package executor

import (
	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// MaxIDLength is the longest task, plan, tenant or owner id accepted.
const MaxIDLength = 128

// ValidateID returns EINVALID unless id is 1..MaxIDLength bytes of [A-Za-z0-9._:-]. kind names
// the id in the message ("taskId", "tenantId", …). Every store checks every id with it before
// the id reaches a key, so no id can carry a hash-tag brace, a glob metacharacter or
// whitespace into the keyspace.
func ValidateID(kind, id string) error {
	if len(id) == 0 || len(id) > MaxIDLength {
		return redstate.Errorf(redstate.EINVALID, "%s must be 1..%d characters, got %d", kind, MaxIDLength, len(id))
	}
	if i := keyspace.InvalidIDByte(id, keyspace.NamePunct); i >= 0 {
		return redstate.Errorf(redstate.EINVALID, "%s %q contains %q; allowed are A-Z a-z 0-9 . _ : -", kind, id, id[i])
	}
	return nil
}

// ValidateControl checks a control command and its target instance. Errors: EINVALID.
func ValidateControl(instance string, cmd ControlCommand) error {
	if err := ValidateID("instance", instance); err != nil {
		return err
	}
	if err := ValidateID("taskId", cmd.TaskID); err != nil {
		return err
	}
	switch cmd.Action {
	case ControlPause, ControlResume, ControlCancel, ControlRetry, ControlRetryFromStart:
		return nil
	}
	return redstate.Errorf(redstate.EINVALID, "unknown control action %q (want pause, resume, cancel, retry or retry-from-start)", cmd.Action)
}
