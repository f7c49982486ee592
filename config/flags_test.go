package config

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// definedFlags returns the names of the flags defined on fs.
func definedFlags(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	slices.Sort(names)
	return names
}

// TestBindFlags_Groups: a group binds --config and exactly its flags; the groups partition
// every flag; no group means all of them.
func TestBindFlags_Groups(t *testing.T) {
	seen := map[string]FlagGroup{}
	for _, g := range AllFlagGroups {
		fs := pflag.NewFlagSet(string(g), pflag.ContinueOnError)
		BindFlags(fs, g)
		want := append([]string{FlagConfig}, GroupFlags(g)...)
		slices.Sort(want)
		if got := definedFlags(fs); !slices.Equal(got, want) || len(want) < 2 {
			t.Errorf("group %s defines %v, want %v", g, got, want)
		}
		for _, f := range GroupFlags(g) {
			if prev, dup := seen[f]; dup {
				t.Errorf("flag --%s is in groups %s and %s", f, prev, g)
			}
			seen[f] = g
		}
	}
	for _, b := range flagBindings {
		if _, ok := seen[b.Flag]; !ok {
			t.Errorf("flag --%s belongs to no group of AllFlagGroups", b.Flag)
		}
	}
	all := pflag.NewFlagSet("all", pflag.ContinueOnError)
	BindFlags(all)
	if got := len(definedFlags(all)); got != len(flagBindings)+1 {
		t.Errorf("BindFlags without groups defines %d flags, want %d", got, len(flagBindings)+1)
	}
}

// TestLoad_FlagsOfOneGroupLeaveTheRestToTheEnvironment: a command binding only the Redis
// group still gets every other key from the environment.
func TestLoad_FlagsOfOneGroupLeaveTheRestToTheEnvironment(t *testing.T) {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	BindFlags(fs, FlagsRedis)
	if err := fs.Parse([]string{"--redis", "redis://127.0.0.1:7"}); err != nil {
		t.Fatal(err)
	}
	if fs.Lookup("namespace") != nil {
		t.Fatal("the Redis group defines --namespace")
	}
	cfg, err := load("", fs, envOf(map[string]string{"REDSTATE_NAMESPACE": "env-", "REDSTATE_REDIS_URL": "redis://127.0.0.1:8"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.URL != "redis://127.0.0.1:7" || cfg.Namespace != "env-" {
		t.Fatalf("redis.url %q namespace %q, want the flag's URL and the environment's namespace", cfg.Redis.URL, cfg.Namespace)
	}
}
