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
