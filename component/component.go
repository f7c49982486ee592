// Package component gives every part of a running redstate process one shape. Each block opens
// itself as a Component (its package's Open, e.g. buildstatusblock.Open) from one Env (the
// process's one Redis client, SQL pool, namespace, metrics and logger) and its own configuration
// section. The composition root (package cli) opens the blocks, starts them in order, asks them
// for their health (/readyz and the dashboard's overview read it) and closes them in reverse
// order within a deadline.
//
// A component never opens a connection of its own and reads no configuration beyond its own
// section: the root (or an embedding Go program) hands it what it needs.
package component

import "context"

// State is the coarse health of a component.
type State string

// The states a component reports.
const (
	// StateOK: the component serves from its configured backend.
	StateOK State = "ok"
	// StateDegraded: the component serves from a fallback (or refuses some work) because a
	// dependency does not answer; Status.Detail says what and what happens meanwhile.
	StateDegraded State = "degraded"
	// StateOff: the component is not configured in this process.
	StateOff State = "off"
)

// Status is what a component says about itself.
type Status struct {
	// Name is the block's name: builds, queue, executor, index, feed.
	Name string
	// Backend names where its state lives, e.g. "redis", "memory", "redis + sql (sqlite)".
	Backend string
	// State is ok, degraded or off.
	State State
	// Detail explains a degraded state or names the mode (e.g. the breaker state).
	Detail string
	// Unready, when not empty, is why the process must not receive traffic because of this
	// component (/readyz answers 503 with it). It names what is down, never an address.
	Unready string
}

// Component is one block (or source, or engine) of a running process.
type Component interface {
	// Name is the block's name, as in Status.Name.
	Name() string
	// Start launches the component's background work (workers, loops, sources), which runs
	// until ctx ends or Close is called. It returns once the work is launched; an error means
	// nothing was left running.
	Start(ctx context.Context) error
	// Close stops the background work, lets running work finish, and releases what the
	// component opened (never the shared Redis client or SQL pool: the root owns those). It
	// returns when done or when ctx ends, with an error saying what did not stop in time.
	// Close may be called without Start and more than once.
	Close(ctx context.Context) error
	// Health reports the component's state now; it may ask its backend (bounded by ctx).
	Health(ctx context.Context) Status
}
