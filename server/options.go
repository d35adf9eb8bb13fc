package server

import (
	"errors"
	"fmt"
	"time"
)

// validate reports every problem of the options as given (before defaults:
// zero means the documented default), joined into one error, or nil. It
// checks every numeric option of Options and SubscriptionOptions for
// negative values and for bounds that can never take effect.
func (o *Options) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("server: "+format, args...))
	}
	if len(o.Endpoints) == 0 {
		bad("at least one endpoint is required")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"HandlerConcurrency", int64(o.HandlerConcurrency)},
		{"HandlerQueue", int64(o.HandlerQueue)},
		{"TaskConcurrency", int64(o.TaskConcurrency)},
		{"MaxBodyBytes", o.MaxBodyBytes},
		{"MaxBufferedBodyBytes", o.MaxBufferedBodyBytes},
		{"MaxJSONDepth", int64(o.MaxJSONDepth)},
		{"MaxResultBytes", int64(o.MaxResultBytes)},
	} {
		if c.v < 0 {
			bad("Options.%s must not be negative (zero means the default), got %d", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		d    time.Duration
	}{
		{"RequestTimeout", o.RequestTimeout},
		{"BodyReadTimeout", o.BodyReadTimeout},
		{"KeepAliveInterval", o.KeepAliveInterval},
		{"RequestStateTTL", o.RequestStateTTL},
	} {
		if c.d < 0 {
			bad("Options.%s must not be negative (zero means the default), got %v", c.name, c.d)
		}
	}
	// Bounds that can never take effect. The checks that involve defaults
	// run after them, in New.
	if o.TaskConcurrency > 0 && o.HandlerConcurrency > 0 && o.TaskConcurrency > o.HandlerConcurrency {
		bad("Options.TaskConcurrency (%d) exceeds HandlerConcurrency (%d)", o.TaskConcurrency, o.HandlerConcurrency)
	}
	if o.MaxBufferedBodyBytes > 0 && o.MaxBodyBytes > 0 && o.MaxBufferedBodyBytes < o.MaxBodyBytes {
		bad("Options.MaxBufferedBodyBytes (%d) is below MaxBodyBytes (%d)", o.MaxBufferedBodyBytes, o.MaxBodyBytes)
	}
	if o.RequestStateKey != nil && len(o.RequestStateKey) != stateKeyLength {
		bad("Options.RequestStateKey must be %d bytes, got %d", stateKeyLength, len(o.RequestStateKey))
	}
	if o.Subscriptions != nil {
		errs = append(errs, o.Subscriptions.validate())
	}
	return errors.Join(errs...)
}

// validate reports every problem of the subscription options as given
// (before defaults), joined into one error, or nil.
func (o *SubscriptionOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("server: "+format, args...))
	}
	if o.Authorizer == nil {
		bad("SubscriptionOptions.Authorizer is required (use AllowSubscriptions to accept every caller)")
	}
	for _, c := range []struct {
		name string
		v    int
	}{
		{"MaxSubscriptions", o.MaxSubscriptions},
		{"MaxPerTenant", o.MaxPerTenant},
		{"MaxPerPrincipal", o.MaxPerPrincipal},
	} {
		if c.v < 0 {
			bad("SubscriptionOptions.%s must not be negative (zero means the default), got %d", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		d    time.Duration
	}{
		{"AuthorizationTimeout", o.AuthorizationTimeout},
		{"MaxLifetime", o.MaxLifetime},
		{"WriteTimeout", o.WriteTimeout},
	} {
		if c.d < 0 {
			bad("SubscriptionOptions.%s must not be negative (zero means the default), got %v", c.name, c.d)
		}
	}
	// A narrower bound set above a wider one can never be reached.
	if o.MaxPerTenant > 0 && o.MaxSubscriptions > 0 && o.MaxPerTenant > o.MaxSubscriptions {
		bad("SubscriptionOptions.MaxPerTenant (%d) exceeds MaxSubscriptions (%d)", o.MaxPerTenant, o.MaxSubscriptions)
	}
	if o.MaxPerPrincipal > 0 && o.MaxPerTenant > 0 && o.MaxPerPrincipal > o.MaxPerTenant {
		bad("SubscriptionOptions.MaxPerPrincipal (%d) exceeds MaxPerTenant (%d)", o.MaxPerPrincipal, o.MaxPerTenant)
	}
	return errors.Join(errs...)
}
