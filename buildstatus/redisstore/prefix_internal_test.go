package redisstore

import (
	"strings"
	"testing"

	"github.com/redstate/redstate/buildstatus"
)

func TestProjectPrefixLen_CoversExactlyIDAndProject(t *testing.T) {
	for _, project := range []string{"p", `quote"and\back`, "<&>", "项目", "{x}:*"} {
		doc := &buildstatus.PublishResponse{BuildID: "550e8400-e29b-41d4-a716-446655440000", ProjectID: project, Status: "X"}
		enc, err := buildstatus.Encode(doc)
		if err != nil {
			t.Fatal(err)
		}
		n := projectPrefixLen(enc)
		if n == 0 || !strings.HasSuffix(string(enc[:n]), `",`) || !strings.HasPrefix(string(enc[n:]), `"platforms":`) {
			t.Fatalf("project %q: prefix %q of %s", project, enc[:n], enc)
		}
	}
	if n := projectPrefixLen([]byte(`{"projectId":"p","buildId":"x"}`)); n != 0 {
		t.Fatalf("foreign field order gave %d, want 0", n)
	}
}
