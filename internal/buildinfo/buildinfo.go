// Package buildinfo tells what a redstate binary was built from: the module version, the VCS
// revision and whether the tree had uncommitted changes, the commit's time and the Go version.
// It reads them from the build information the go command embeds (runtime/debug.ReadBuildInfo);
// only the version can be set with -ldflags, for a release built from a commit its tag does not
// name yet.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Version overrides the module version when set at link time:
//
//	go build -ldflags "-X github.com/redstate/redstate/internal/buildinfo.Version=v1.2.3"
//
// Empty (the default) means the version the go command stamped: the tag of the commit, a
// pseudo-version (v0.0.0-<time>-<revision>[+dirty]) or "(devel)" (go run, go test).
var Version = ""

// Info is what a binary was built from.
type Info struct {
	// Version is the module version (see Version), "(devel)" when the go command stamped none.
	Version string `json:"version"`
	// Revision is the VCS revision (the git commit), "" when unknown (go run, go test).
	Revision string `json:"revision"`
	// Dirty is true when the working tree had uncommitted changes.
	Dirty bool `json:"dirty"`
	// BuildTime is the commit's time: release builds are reproducible (the same source gives
	// the same bytes), so a binary carries the time of its source, never the clock at build
	// time. Zero when unknown.
	BuildTime time.Time `json:"buildTime"`
	// GoVersion is the Go toolchain that built the binary ("go1.26.8").
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Read returns the running binary's Info.
func Read() Info {
	info := Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromBuildInfo(bi, info)
	}
	if Version != "" {
		info.Version = Version
	}
	return info
}

// fromBuildInfo fills info from bi.
func fromBuildInfo(bi *debug.BuildInfo, info Info) Info {
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Dirty = s.Value == "true"
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				info.BuildTime = t
			}
		}
	}
	return info
}

// Short is the one-line form: "v1.2.3 (abc1234, dirty, 2026-11-28T10:00:00Z, go1.26.8 linux/amd64)".
func (i Info) Short() string {
	s := i.Version + " ("
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += rev + ", "
		if i.Dirty {
			s += "dirty, "
		}
	}
	if !i.BuildTime.IsZero() {
		s += i.BuildTime.UTC().Format(time.RFC3339) + ", "
	}
	return s + i.GoVersion + " " + i.Platform + ")"
}
