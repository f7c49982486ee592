package component

import (
	"context"
	"errors"
	"fmt"
)

// Group is the ordered set of a process's components: started in the order they were added,
// closed in the reverse order. It is not safe for concurrent Add; Health may be called
// concurrently with anything.
type Group struct {
	parts   []Component
	started int
}

// Add appends c; it starts after every component added before it and closes before them.
func (g *Group) Add(c Component) { g.parts = append(g.parts, c) }

// Components returns the components in start order.
func (g *Group) Components() []Component { return g.parts }

// Start starts every component not started yet, in order. When one fails, the ones it
// started are closed (in reverse order, within ctx) and the error names the component.
func (g *Group) Start(ctx context.Context) error {
	for ; g.started < len(g.parts); g.started++ {
		c := g.parts[g.started]
		if err := c.Start(ctx); err != nil {
			err = fmt.Errorf("start %s: %w", c.Name(), err)
			return errors.Join(err, g.Close(ctx))
		}
	}
	return nil
}

// Close closes every component in reverse order of Add (started or not: a component built
// but never started still releases what it opened). Each gets what is left of ctx; the
// errors of all are returned, each naming its component.
func (g *Group) Close(ctx context.Context) error {
	var errs []error
	for i := len(g.parts) - 1; i >= 0; i-- {
		c := g.parts[i]
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", c.Name(), err))
		}
	}
	g.parts, g.started = nil, 0
	return errors.Join(errs...)
}

// Health returns every component's status, in start order.
func (g *Group) Health(ctx context.Context) []Status {
	out := make([]Status, 0, len(g.parts))
	for _, c := range g.parts {
		out = append(out, c.Health(ctx))
	}
	return out
}
