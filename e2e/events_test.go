package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redistest"
)

// TestEvents_CrossInstance watches a build on one redstate process while another process, sharing
// the same Redis, writes it: the watcher must see the change (Redis Pub/Sub fans it out).
func TestEvents_CrossInstance(t *testing.T) {
	redis := redistest.StartStandalone(t)
	watcher := startServer(t, "--redis", redis.URL)
	writer := startServer(t, "--redis", redis.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watcher.Base+"/v1/builds/"+sampleID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- name
			}
		}
	}()
	if first := <-events; first != "missing" {
		t.Fatalf("first event for an absent build = %q, want missing", first)
	}

	code, body, hdr := writer.do(t, http.MethodPut, "/v1/builds/"+sampleID, sampleBuild)
	if code != http.StatusOK {
		t.Fatalf("PUT on the other instance: %d %s", code, body)
	}
	select {
	case ev, ok := <-events:
		if !ok || ev != "saved" {
			t.Fatalf("after a PUT on another instance the watcher got %q (open=%v), want saved", ev, ok)
		}
	case <-ctx.Done():
		t.Fatal("the watcher saw no event for a PUT made through another instance")
	}
	if code, _, _ := writer.do(t, http.MethodDelete, "/v1/builds/"+sampleID, "", "If-Match", hdr.Get("ETag")); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	select {
	case ev := <-events:
		if ev != "deleted" {
			t.Fatalf("after DELETE the watcher got %q, want deleted", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watcher saw no deleted event")
	}
}
