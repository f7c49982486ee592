package bench

import (
	"context"
	"fmt"
)

// Pair is one operation measured on ours and on a baseline.
type Pair struct {
	// Name names the operation in progress lines and result names ("get", "lock.cycle").
	Name string
	// Ours and Baseline are the two implementations.
	Ours, Baseline Op
}

// Suite measures operations one after the other, each with RunPair.
type Suite struct {
	// Prefix starts every comparison's name (Prefix + Pair.Name, e.g. "buildstatus.get").
	Prefix string
	// Baseline names the baseline's results (Pair.Name + "/" + Baseline, e.g. "get/raw");
	// Against names it in progress lines ("ours vs <Against>"; default Baseline).
	Baseline, Against string
	// Config is the load of every RunPair.
	Config Config
	// Check returns an error that ends the run after the operation name was measured;
	// default Failed(ours, baseline).
	Check func(name string, ours, baseline *Result) error
}

// Run measures pairs in order and returns their comparisons. It stops at the first check
// that fails or when ctx ends, returning what was measured so far with the error.
func (s Suite) Run(ctx context.Context, pairs []Pair) (Comparisons, error) {
	against, check := s.Against, s.Check
	if against == "" {
		against = s.Baseline
	}
	if check == nil {
		check = func(_ string, ours, baseline *Result) error { return Failed(ours, baseline) }
	}
	var out Comparisons
	for _, p := range pairs {
		if s.Config.Progress != nil {
			fmt.Fprintf(s.Config.Progress, "%s: ours vs %s, %d clients, %s each, alternating\n", p.Name, against, s.Config.Clients, s.Config.Duration)
		}
		ours, base := RunPair(ctx, p.Name+"/ours", p.Name+"/"+s.Baseline, s.Config, p.Ours, p.Baseline)
		if err := check(p.Name, ours, base); err != nil {
			return out, err
		}
		out = append(out, Comparison{Name: s.Prefix + p.Name, Ours: ours, Baseline: base})
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Failed returns an error for the first of rs with failed operations (nil when none).
func Failed(rs ...*Result) error {
	for _, r := range rs {
		if r.Errors > 0 {
			return fmt.Errorf("%s: %d operations failed, first: %w", r.Name, r.Errors, r.FirstErr)
		}
	}
	return nil
}
