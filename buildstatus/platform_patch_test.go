package buildstatus

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redstate/redstate"
)

func TestMergePlatformPatch(t *testing.T) {
	log, progress := "https://ci.example/1.log", 40
	cur := &PlatformResult{Platform: "ios", Status: "IN_PROGRESS", Progress: &progress, LogURL: &log}
	got, err := MergePlatformPatch(cur, "ios", map[string]json.RawMessage{"status": json.RawMessage(`"SUCCESS"`), "progress": json.RawMessage(`null`)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "SUCCESS" || got.Progress != nil || got.LogURL == nil || *got.LogURL != log || got.Platform != "ios" {
		t.Fatalf("merged %+v", got)
	}
	if cur.Status != "IN_PROGRESS" || cur.Progress == nil {
		t.Fatalf("the current entry was modified: %+v", cur)
	}
	for name, tc := range map[string]struct {
		cur   *PlatformResult
		patch string
		want  string
	}{
		"unknown member":       {cur, `{"logURL":"x"}`, `unknown member "logURL"`},
		"other platform":       {cur, `{"platform":"android"}`, "does not match the path's"},
		"new without status":   {nil, `{"progress":1}`, "status"},
		"wrong type":           {cur, `{"progress":"half"}`, "progress must not be a JSON string"},
		"bad new value":        {cur, `{"progress":101}`, "progress must be between 0 and 100"},
		"stored invalid value": {&PlatformResult{Platform: "ios", Status: "X", DownloadURL: ptr("javascript:alert(1)")}, `{"progress":1}`, "the stored entry of platform ios keeps an invalid member: downloadUrl"},
	} {
		var patch map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.patch), &patch); err != nil {
			t.Fatal(err)
		}
		_, err := MergePlatformPatch(tc.cur, "ios", patch)
		if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(redstate.ErrorMessage(err), tc.want) {
			t.Errorf("%s: %v, want EINVALID containing %q", name, err, tc.want)
		}
	}
	fixed, err := MergePlatformPatch(&PlatformResult{Platform: "ios", Status: "X", DownloadURL: ptr("javascript:alert(1)")}, "ios", map[string]json.RawMessage{"downloadUrl": json.RawMessage(`null`)})
	if err != nil || fixed.DownloadURL != nil {
		t.Fatalf("clearing the stored invalid member: %+v, %v", fixed, err)
	}
}

func ptr[T any](v T) *T { return &v }
