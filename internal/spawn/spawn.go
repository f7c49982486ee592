// Package spawn starts child processes (test servers) from one goroutine locked to its own OS
// thread. On Linux, Pdeathsig fires when the *thread* that forked the child exits, not the
// process; Go may retire threads (for example when a goroutine that called
// runtime.LockOSThread ends). The spawner thread never exits, so a child started with
// Pdeathsig dies exactly when the test binary does.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
)

var (
	once sync.Once
	reqs chan request
)

type request struct {
	cmd  *exec.Cmd
	errc chan error
}

// Start starts cmd on the spawner thread and returns cmd.Start's error.
func Start(cmd *exec.Cmd) error {
	once.Do(func() {
		reqs = make(chan request)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives forever
			for r := range reqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	reqs <- request{cmd: cmd, errc: errc}
	return <-errc
}
