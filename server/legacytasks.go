package server

// legacyTaskHooks returns the hooks through which the 2025-11-25
// experimental tasks layer serves task tools and the tasks/* methods in
// legacy sessions (see legacyHooks). This file belongs to that layer; until
// it lands the hooks are empty and legacy sessions get the defaults: task
// tools run inline when optional and are refused when required.
func (ep *Endpoint) legacyTaskHooks(*Server) (legacyHooks, error) {
	return legacyHooks{}, nil
}
