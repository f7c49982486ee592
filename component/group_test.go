package component

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fake records its calls in a shared journal.
type fake struct {
	name     string
	journal  *[]string
	startErr error
}

func (f *fake) Name() string { return f.name }
func (f *fake) Start(context.Context) error {
	*f.journal = append(*f.journal, "start "+f.name)
	return f.startErr
}
func (f *fake) Close(context.Context) error {
	*f.journal = append(*f.journal, "close "+f.name)
	return nil
}
func (f *fake) Health(context.Context) Status { return Status{Name: f.name, State: StateOK} }

func TestGroup_StartsInOrderClosesInReverse(t *testing.T) {
	var journal []string
	var g Group
	for _, n := range []string{"a", "b", "c"} {
		g.Add(&fake{name: n, journal: &journal})
	}
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Health(t.Context()); len(got) != 3 || got[0].Name != "a" || got[2].Name != "c" {
		t.Errorf("health = %+v", got)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "start c", "close c", "close b", "close a"}
	if !slices.Equal(journal, want) {
		t.Errorf("calls = %v, want %v", journal, want)
	}
	if err := g.Close(t.Context()); err != nil || len(journal) != len(want) {
		t.Errorf("a second close did something: %v %v", err, journal)
	}
}

func TestGroup_FailedStartClosesEverything(t *testing.T) {
	var journal []string
	var g Group
	g.Add(&fake{name: "a", journal: &journal})
	g.Add(&fake{name: "b", journal: &journal, startErr: errors.New("boom")})
	g.Add(&fake{name: "c", journal: &journal})
	err := g.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "start b: boom") {
		t.Fatalf("err = %v, want it to name b", err)
	}
	want := []string{"start a", "start b", "close c", "close b", "close a"}
	if !slices.Equal(journal, want) {
		t.Errorf("calls = %v, want %v", journal, want)
	}
}

func TestBackground_StopWaitsAndIsBounded(t *testing.T) {
	var b Background
	stopped := make(chan struct{})
	b.Go(t.Context(), func(ctx context.Context) { <-ctx.Done(); close(stopped) })
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before the goroutine did")
	}

	var stuck Background
	release := make(chan struct{})
	defer close(release)
	stuck.Go(t.Context(), func(context.Context) { <-release })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := stuck.Stop(ctx); err == nil || !strings.Contains(err.Error(), "did not stop in time") {
		t.Errorf("err = %v, want a deadline error", err)
	}
}

func TestBackground_ParentEndStopsWork(t *testing.T) {
	var b Background
	parent, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	b.Go(parent, func(ctx context.Context) { <-ctx.Done(); close(done) })
	cancel()
	<-done // would hang (test timeout) if the parent's end did not reach the goroutine
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}
