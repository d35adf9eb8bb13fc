package taskdata

import (
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// Defaults of the enqueue defaults every store's Options carry.
const (
	DefaultTTL          = 24 * time.Hour
	DefaultPollInterval = time.Second
)

// Resolve fills in the zero fields of a store's enqueue defaults (TTL
// DefaultTTL, PollInterval DefaultPollInterval, MaxAttempts
// backend.DefaultMaxAttempts) and checks them as Options fields: a
// negative TTL (unlimited) is kept, a positive one and PollInterval must be
// whole milliseconds, PollInterval must not be negative, and MaxAttempts
// must be within [0, backend.MaxMaxAttempts]. The errors name the Options
// fields (DefaultTTL, ...).
func (d *EnqueueDefaults) Resolve() error {
	if d.TTL == 0 {
		d.TTL = DefaultTTL
	}
	if d.PollInterval == 0 {
		d.PollInterval = DefaultPollInterval
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = backend.DefaultMaxAttempts
	}
	switch {
	case d.MaxAttempts < 0 || d.MaxAttempts > backend.MaxMaxAttempts:
		return fmt.Errorf("DefaultMaxAttempts must be between 0 and %d", backend.MaxMaxAttempts)
	case d.TTL > 0 && d.TTL%time.Millisecond != 0:
		return errors.New("DefaultTTL must be whole milliseconds")
	case d.PollInterval < 0 || d.PollInterval%time.Millisecond != 0:
		return errors.New("DefaultPollInterval must be positive whole milliseconds")
	}
	return nil
}
