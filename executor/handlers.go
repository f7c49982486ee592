package executor

import "github.com/redstate/redstate"

// Handle registers a stage handler under name (replacing any earlier one). Tasks name their
// handler in TaskDef.Handler.
func (r *Runner) Handle(name string, h StageHandler) {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	r.handlers[name] = h
}

// HasHandler reports whether name is registered.
func (r *Runner) HasHandler(name string) bool {
	r.hmu.RLock()
	defer r.hmu.RUnlock()
	_, ok := r.handlers[name]
	return ok
}

func (r *Runner) handler(name string) (StageHandler, error) {
	r.hmu.RLock()
	defer r.hmu.RUnlock()
	h, ok := r.handlers[name]
	if !ok {
		return nil, redstate.Errorf(redstate.EINVALID, "no stage handler %q is registered on this instance", name)
	}
	return h, nil
}
