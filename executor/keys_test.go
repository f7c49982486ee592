package executor_test

import (
	"strings"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

func TestNewKeys_GlobalNamespacePrefixesEveryKey(t *testing.T) {
	k, err := executor.NewKeys(redstate.Prefix("prod-", "executor"))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{k.Checkpoint("t1"), k.Task("t1")} {
		if !strings.HasPrefix(key, "prod-executor:") {
			t.Errorf("key %q is not under the global namespace", key)
		}
	}
	if k.Namespace() != "prod-executor" {
		t.Errorf("Namespace() = %q", k.Namespace())
	}
	for _, bad := range []string{"pr*d-", "a b", "{x}"} {
		if _, err := executor.NewKeys(redstate.Prefix(bad, "executor")); !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("prefix %q: %v, want EINVALID", bad, err)
		}
	}
}
