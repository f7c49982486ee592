package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestQueueList_Pages: without limit every queue is answered; with limit the pages follow
// next to the end, each name once, in order, with the total on every page; match filters by
// substring (case-insensitive) before paging; a bad limit is EINVALID.
func TestQueueList_Pages(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	admins := map[string]*queue.Admin{}
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("q%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("Mail-%02d", i)
		}
		a, err := queue.NewAdmin(b, name)
		if err != nil {
			t.Fatal(err)
		}
		admins[name] = a
		names = append(names, name)
	}
	slices.Sort(names)
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Queues = func(name string) *queue.Admin { return admins[name] }
		d.QueueNames = func() []string { return names }
	})
	list := func(query string) queueListAnswer {
		t.Helper()
		r := a.do("GET", "/v1/queues"+query, "")
		var body queueListAnswer
		if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil {
			t.Fatalf("GET /v1/queues%s = %d %s", query, r.status, r.body)
		}
		return body
	}
	walk := func(query string) (got []string, totals []int) {
		t.Helper()
		cursor := ""
		for {
			page := list(query + "&cursor=" + cursor)
			for _, q := range page.Queues {
				got = append(got, q.Name)
			}
			totals = append(totals, page.Total)
			if page.Next == "" {
				return got, totals
			}
			cursor = page.Next
		}
	}

	all := list("")
	if len(all.Queues) != 10 || all.Total != 10 || all.Next != "" {
		t.Fatalf("without limit: %d queues, total %d, next %q", len(all.Queues), all.Total, all.Next)
	}
	got, totals := walk("?limit=4")
	if !slices.Equal(got, names) || !slices.Equal(totals, []int{10, 10, 10}) {
		t.Fatalf("pages of 4 list %v with totals %v, want %v in 3 pages", got, totals, names)
	}
	got, totals = walk("?limit=2&match=mail")
	if want := []string{"Mail-00", "Mail-03", "Mail-06", "Mail-09"}; !slices.Equal(got, want) || !slices.Equal(totals, []int{4, 4}) {
		t.Fatalf("match=mail lists %v with totals %v, want %v in 2 pages", got, totals, want)
	}
	if page := list("?limit=3&cursor=zz"); len(page.Queues) != 0 || page.Next != "" || page.Total != 10 {
		t.Fatalf("after the last name: %+v", page)
	}
	for _, bad := range []string{"0", "-1", "1001", "x"} {
		wantError(t, a.do("GET", "/v1/queues?limit="+bad, ""), http.StatusBadRequest, "invalid")
	}
}
