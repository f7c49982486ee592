package deploy

import (
	"os"
	"strings"
	"testing"
)

// instructions returns the instructions of a Containerfile that describe the running image (the
// final stage's USER, VOLUME, EXPOSE, HEALTHCHECK, ENTRYPOINT, CMD and ENV), joined across
// continuation lines.
func instructions(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "FROM":
			out = map[string]string{} // only the final stage counts
		case "USER", "VOLUME", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD", "ENV":
			out[word] = strings.Join(strings.Fields(rest), " ")
		}
	}
	return out
}

// TestImageRecipes_DescribeTheSameImage: the Dockerfile (built from source, for users with a
// registry) and deploy/image/Containerfile (make image, offline, FROM scratch) run the binary
// the same way: user, volume, port, health check, entrypoint, default command; and the
// Dockerfile's environment is the Containerfile's (which adds only the locations of the
// certificates and time zone data it copies from the host).
func TestImageRecipes_DescribeTheSameImage(t *testing.T) {
	docker := instructions(t, "../Dockerfile")
	offline := instructions(t, "image/Containerfile")
	for _, k := range []string{"USER", "VOLUME", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD"} {
		if docker[k] == "" || docker[k] != offline[k] {
			t.Errorf("%s: Dockerfile %q, Containerfile %q", k, docker[k], offline[k])
		}
	}
	if !strings.HasPrefix(offline["ENV"], docker["ENV"]) {
		t.Errorf("ENV: Dockerfile %q is not the start of the Containerfile's %q", docker["ENV"], offline["ENV"])
	}
	if docker["USER"] != "65532:65532" || docker["CMD"] != `["serve"]` {
		t.Errorf("the image runs as %q with %q; want the non-root 65532:65532 and serve", docker["USER"], docker["CMD"])
	}
}
