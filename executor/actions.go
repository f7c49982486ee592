package executor

// Actions lists the controls a task in status s allows, as Pause, Resume, Cancel and Retry
// decide them: "pause" while it is CREATED or RUNNING without a pending pause; "resume" while
// it is PAUSED, or RUNNING with a pause requested (which withdraws the request); "cancel" until
// it is COMPLETED or CANCELLED; "retry" (from its checkpoint or from the start) while it is
// FAILED or PAUSED (a CREATED task may be waiting for its lock, which Retry refuses). A pause
// requested again is accepted and changes nothing, so it is not listed. The dashboard offers
// exactly these (TaskStatusInfo.Actions); a task changing between the read and the call still
// gets ECONFLICT from the call.
func (s TaskStatus) Actions(pauseRequested bool) []string {
	out := []string{}
	switch {
	case s == TaskCreated, s == TaskRunning && !pauseRequested:
		out = append(out, ControlPause)
	case s == TaskPaused, s == TaskRunning && pauseRequested:
		out = append(out, ControlResume)
	}
	if s != TaskCompleted && s != TaskCancelled {
		out = append(out, ControlCancel)
	}
	if s == TaskFailed || s == TaskPaused {
		out = append(out, ControlRetry)
	}
	return out
}
