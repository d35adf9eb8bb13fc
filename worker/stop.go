package worker

// StopRunning cancels the contexts of the running handlers at once, with
// cause ErrShuttingDown, as the end of Options.ShutdownGrace does, and those
// of handlers started later as soon as they start. Their jobs are released
// (Store.Release: no failure or interrupted run is counted) once the
// handlers return. It is for an operator who does not want to wait for the
// drain, as on a second Ctrl-C; Run still returns only when every handler
// has returned. It does not stop claiming: until Run's context is done,
// a released job may be claimed again, to be cancelled and released at
// once; to stop at once, end that context first. It is safe to call at any
// time and more than once.
func (rt *Runtime) StopRunning() { rt.stopJobs(ErrShuttingDown) }
