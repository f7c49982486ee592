//go:build soak

package redisstore_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// soakDuration is how long each soak phase runs: REDSTATE_SOAK_DURATION or 30s.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("REDSTATE_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("REDSTATE_SOAK_DURATION: %v", err)
		}
		return d
	}
	return 30 * time.Second
}

// soakProjects include ids that are hostile to key and pattern construction.
var soakProjects = []string{"plain", "*", "a*", "a", "a:b", "{a}", "[x]", "?", "项目", "a:builds"}

// TestSoak_MixedLoadKeepsInvariants runs writers that own disjoint builds (save, update,
// delete, re-create) against readers that check every listing as it is served, then compares
// the final state with the writers' models, on standalone and Cluster.
func TestSoak_MixedLoadKeepsInvariants(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		s := mustNew(t, client, time.Hour)
		ctx := t.Context()
		deadline := time.Now().Add(soakDuration(t))
		const writers = 8
		models := make([]map[string][]byte, writers) // build id -> stored JSON, per writer
		projectOf := map[string]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var failures []string
		fail := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			if len(failures) < 20 {
				failures = append(failures, fmt.Sprintf(format, args...))
			}
		}
		for w := range writers {
			models[w] = map[string][]byte{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				ids := make([]string, 25)
				for i := range ids {
					ids[i] = storetest.NewBuildID()
					mu.Lock()
					projectOf[ids[i]] = soakProjects[rng.IntN(len(soakProjects))]
					mu.Unlock()
				}
				for n := 0; time.Now().Before(deadline); n++ {
					id := ids[rng.IntN(len(ids))]
					mu.Lock()
					project := projectOf[id]
					mu.Unlock()
					var err error
					switch op := rng.IntN(10); {
					case op < 5:
						doc := storetest.SampleDoc(id, project)
						doc.Status = "S" + strconv.Itoa(n)
						// createdAt never changes for a build (ties are frequent on purpose).
						doc.CreatedAt = buildstatus.NewLocalDateTime(time.Unix(int64(id[0]%5), 0))
						var b *buildstatus.Build
						if b, err = s.Save(ctx, doc, buildstatus.SaveOptions{}); err == nil {
							models[w][id] = b.JSON
						}
					case op < 8:
						if _, ok := models[w][id]; !ok {
							continue
						}
						progress := rng.IntN(101)
						var b *buildstatus.Build
						b, err = s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "p" + strconv.Itoa(rng.IntN(4)), Status: "RUNNING", Progress: &progress}, "")
						if err == nil {
							models[w][id] = b.JSON
						}
					default:
						if _, ok := models[w][id]; !ok {
							continue
						}
						if err = s.Delete(ctx, id, ""); err == nil {
							delete(models[w], id)
						}
					}
					if err != nil {
						fail("writer %d: %v", w, err)
						return
					}
				}
			}()
		}
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					project := soakProjects[r%len(soakProjects)]
					checkProjectListing(t, s, project, fail)
				}
			}()
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("invariant violations under load:\n%s", failures)
		}

		// Quiesced: the store must hold exactly the writers' models.
		want := map[string][]byte{}
		for _, m := range models {
			for id, v := range m {
				want[id] = v
			}
		}
		for id, v := range want {
			got, err := s.Get(ctx, id)
			if err != nil || !bytes.Equal(got.JSON, v) {
				t.Fatalf("build %s after the soak: %v\n got %s\nwant %s", id, err, jsonOf(got), v)
			}
		}
		for _, project := range soakProjects {
			var listed []string
			cursor := ""
			for {
				p, err := s.ListProject(ctx, project, cursor, 7)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range p.Builds {
					id, _, _ := buildstatus.IdentityOf(b.JSON)
					listed = append(listed, id)
				}
				if cursor = p.Cursor; cursor == "" {
					break
				}
			}
			var expected []string
			for id := range want {
				if projectOf[id] == project {
					expected = append(expected, id)
				}
			}
			slices.Sort(listed)
			slices.Sort(expected)
			if !slices.Equal(listed, expected) {
				t.Fatalf("project %q lists %d builds, the model has %d:\n listed %v\n model  %v", project, len(listed), len(expected), listed, expected)
			}
		}
		t.Logf("soak: %d builds alive at the end across %d projects", len(want), len(soakProjects))
	})
}

// checkProjectListing walks one project's listing and reports builds of other projects, order
// violations and duplicates.
func checkProjectListing(t *testing.T, s buildstatus.Store, project string, fail func(string, ...any)) {
	cursor := ""
	seen := map[string]bool{}
	var last *buildstatus.ProjectCursor
	for {
		p, err := s.ListProject(t.Context(), project, cursor, 5)
		if err != nil {
			if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
				fail("ListProject(%q): %v", project, err)
			}
			return
		}
		for _, b := range p.Builds {
			doc, err := b.Doc()
			if err != nil {
				fail("ListProject(%q) returned an undecodable build: %v", project, err)
				return
			}
			if doc.ProjectID != project {
				fail("ListProject(%q) returned build %s of project %q", project, doc.BuildID, doc.ProjectID)
			}
			if seen[doc.BuildID] {
				fail("ListProject(%q) returned build %s twice in one walk", project, doc.BuildID)
			}
			seen[doc.BuildID] = true
			here := buildstatus.ProjectCursor{Score: buildstatus.ProjectScore(doc, time.Time{}), BuildID: doc.BuildID}
			if last != nil && !last.Before(here.Score, here.BuildID) {
				fail("ListProject(%q) out of order: %v then %v", project, *last, here)
			}
			last = &here
		}
		if cursor = p.Cursor; cursor == "" {
			return
		}
	}
}

func jsonOf(b *buildstatus.Build) string {
	if b == nil {
		return "<nil>"
	}
	return string(b.JSON)
}
