package redisstore

import (
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// TestExecSaves_OneFailingSaveDoesNotFailItsBatch: saves coalesced into one saveScript call
// succeed or fail independently. A save that hits a Redis error (here a build key holding a
// hash, written by something else) must not turn the saves already committed by the same
// call into errors.
func TestExecSaves_OneFailingSaveDoesNotFailItsBatch(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	s, err := New(client, Options{Keys: buildstatus.NewKeys(redstate.Prefix("batchfail-"+storetest.NewBuildID()+"-", "")), TTL: time.Hour, DirectCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	good, bad := storetest.NewBuildID(), storetest.NewBuildID()
	if err := client.HSet(ctx, s.keys.Build(bad), "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	req := func(id string) saveReq {
		doc := storetest.SampleDoc(id, "p")
		encoded, err := buildstatus.Encode(doc)
		if err != nil {
			t.Fatal(err)
		}
		return saveReq{buildKey: s.keys.Build(id), indexKey: s.indexKey("p", id), args: []any{
			encoded, "", "0", "p", encoded[:projectPrefixLen(encoded)],
			buildstatus.ProjectScore(doc, time.Now()), id, s.keys.Events(id), "0",
		}}
	}
	outs := s.execSaves(ctx, []saveReq{req(good), req(bad)})
	if outs[0].Err != nil || outs[0].Value.code != resOK {
		t.Fatalf("committed save reported %q, %v; want OK", outs[0].Value.code, outs[0].Err)
	}
	if outs[1].Err == nil && outs[1].Value.code == resOK {
		t.Fatal("save over a hash reported OK")
	}
	if _, err := s.Get(ctx, good); err != nil {
		t.Fatalf("Get of the committed save: %v", err)
	}
}

// conditionalReq returns a save of a sample document of build id in project p, with IfMatch
// ifMatch (IfNoneMatch when ""), asking for the current value on a PRECONDITION.
func conditionalReq(t *testing.T, s *Store, id, ifMatch string) saveReq {
	t.Helper()
	doc := storetest.SampleDoc(id, "p")
	encoded, err := buildstatus.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	return saveReq{buildKey: s.keys.Build(id), indexKey: s.indexKey("p", id), conditional: true, args: []any{
		encoded, ifMatch, flag(ifMatch == ""), "p", encoded[:projectPrefixLen(encoded)],
		buildstatus.ProjectScore(doc, time.Now()), id, s.keys.Events(id), "1",
	}}
}

// TestExecSaves_OneMarkerPerCall: conditional saves coalesced into one saveScript call leave
// one call marker in all, not one per save.
func TestExecSaves_OneMarkerPerCall(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	s, err := New(client, Options{Keys: buildstatus.NewKeys(redstate.Prefix("marker-"+storetest.NewBuildID()+"-", "")), TTL: time.Hour, DirectCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	reqs := []saveReq{conditionalReq(t, s, storetest.NewBuildID(), ""), conditionalReq(t, s, storetest.NewBuildID(), ""), conditionalReq(t, s, storetest.NewBuildID(), "")}
	for i, o := range s.execSaves(ctx, reqs) {
		if o.Err != nil || o.Value.code != resOK {
			t.Fatalf("save %d: %q, %v", i, o.Value.code, o.Err)
		}
	}
	markers, err := client.Keys(ctx, s.keys.CallMarkers()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) != 1 {
		t.Fatalf("%d call markers %v after one call of 3 conditional saves, want 1", len(markers), markers)
	}
}

// TestSaveScript_CopyAnswersAsTheFirst: the copy of a call (the same keys and arguments, as
// go-redis sends it again) changes nothing and answers what the first copy answered, save by
// save: OK for a create that took effect (not EXISTS), PRECONDITION with the current value
// for a stale IfMatch, and it publishes nothing.
func TestSaveScript_CopyAnswersAsTheFirst(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	s, err := New(client, Options{Keys: buildstatus.NewKeys(redstate.Prefix("copy-"+storetest.NewBuildID()+"-", "")), TTL: time.Hour, DirectCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	created, stale := storetest.NewBuildID(), storetest.NewBuildID()
	first, err := s.Save(ctx, storetest.SampleDoc(stale, "p"), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []saveReq{conditionalReq(t, s, created, ""), conditionalReq(t, s, stale, "0000000000000000000000000000000000000000")}
	keys := []string{s.markerKey(reqs[0].buildKey, true)}
	args := []any{s.ttl.Milliseconds(), s.window.Milliseconds(), "1"}
	for _, r := range reqs {
		keys = append(keys, r.buildKey, r.indexKey)
		args = append(args, r.args...)
	}
	sub := client.Subscribe(ctx, s.keys.Events(created), s.keys.Events(stale))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var replies [2][]any
	for attempt := range replies {
		if replies[attempt], err = saveScript.Run(ctx, client, keys, args...).Slice(); err != nil {
			t.Fatalf("call %d: %v", attempt, err)
		}
	}
	for attempt, r := range replies {
		okCode, _, _ := parseResult(r[0].([]any))
		code, cur, _ := parseResult(r[1].([]any))
		if okCode != resOK || code != resPrecondition || string(cur) != string(first.JSON) {
			t.Fatalf("call %d answered %q, %q with current %q; want OK, then PRECONDITION with the stored document", attempt, okCode, code, cur)
		}
	}
	// A marker published after both calls comes right after the create's one event.
	if err := client.Publish(ctx, s.keys.Events(created), "end").Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range sub.Channel() {
		got = append(got, m.Payload)
		if m.Payload == "end" {
			break
		}
	}
	if len(got) != 2 || got[0] == "end" {
		t.Fatalf("events %q, want the create's document once, then the end marker", got)
	}
}
