package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestFromBuildInfo_ReadsTheVCSStamp(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/redstate/redstate", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-28T10:00:00Z"}}}
	got := fromBuildInfo(bi, Info{Version: "(devel)", Platform: "linux/amd64"})
	want := Info{Version: "v0.3.0", Revision: "0123456789abcdef0123", Dirty: true, BuildTime: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if s := got.Short(); s != "v0.3.0 (0123456789ab, dirty, 2026-11-28T10:00:00Z, go1.26.8 linux/amd64)" {
		t.Fatalf("Short = %q", s)
	}
}

func TestRead_LinkTimeVersionWins(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.9.9"
	if got := Read(); got.Version != "v9.9.9" || got.GoVersion == "" || got.Platform == "" {
		t.Fatalf("Read = %+v", got)
	}
	Version = ""
	if got := Read(); got.Version == "" {
		t.Fatalf("Read without a link-time version = %+v", got)
	}
}
