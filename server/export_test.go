package server

import "time"

// SetClockForTest replaces the server clock of o, which session times,
// request state expiry and observer durations use (tests only).
func SetClockForTest(o *Options, now func() time.Time) { o.now = now }
