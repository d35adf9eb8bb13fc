package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/taskwire/taskwire/internal/hostcheck"
)

// DefaultBodyReadTimeout is the default of Options.BodyReadTimeout, which
// taskwire serve's --body-timeout shares.
const DefaultBodyReadTimeout = 10 * time.Second

// validate reports every problem of the options as given (before defaults:
// zero means the documented default), joined into one error, or nil. It
// checks every numeric option of Options, TaskLimits, SubscriptionOptions
// and SessionOptions for
// negative values and for bounds that can never take effect, the node
// ID, and the forms of AllowedHosts and AllowedOrigins.
func (o *Options) validate() error {
	var c optionChecker
	if len(o.Endpoints) == 0 {
		c.bad("at least one endpoint is required")
	}
	c.counts("Options",
		named{"HandlerConcurrency", int64(o.HandlerConcurrency)},
		named{"HandlerQueue", int64(o.HandlerQueue)},
		named{"TaskConcurrency", int64(o.TaskConcurrency)},
		named{"MaxBodyBytes", o.MaxBodyBytes},
		named{"MaxBufferedBodyBytes", o.MaxBufferedBodyBytes},
		named{"MaxJSONDepth", int64(o.MaxJSONDepth)},
		named{"MaxResultBytes", int64(o.MaxResultBytes)},
		named{"MaxTaskWaits", int64(o.MaxTaskWaits)})
	c.durations("Options",
		named{"RequestTimeout", int64(o.RequestTimeout)},
		named{"TaskQueueTimeout", int64(o.TaskQueueTimeout)},
		named{"BodyReadTimeout", int64(o.BodyReadTimeout)},
		named{"KeepAliveInterval", int64(o.KeepAliveInterval)},
		named{"RequestStateTTL", int64(o.RequestStateTTL)},
		named{"InlineTaskWait", int64(o.InlineTaskWait)})
	// Bounds that can never take effect. The checks that involve defaults
	// run after them, in New.
	if o.TaskConcurrency > 0 && o.HandlerConcurrency > 0 && o.TaskConcurrency > o.HandlerConcurrency {
		c.bad("Options.TaskConcurrency (%d) exceeds HandlerConcurrency (%d)", o.TaskConcurrency, o.HandlerConcurrency)
	}
	if o.MaxBufferedBodyBytes > 0 && o.MaxBodyBytes > 0 && o.MaxBufferedBodyBytes < o.MaxBodyBytes {
		c.bad("Options.MaxBufferedBodyBytes (%d) is below MaxBodyBytes (%d)", o.MaxBufferedBodyBytes, o.MaxBodyBytes)
	}
	if o.RequestStateKey != nil && len(o.RequestStateKey) != stateKeyLength {
		c.bad("Options.RequestStateKey must be %d bytes, got %d", stateKeyLength, len(o.RequestStateKey))
	}
	o.TaskLimits.validate(&c)
	if o.Subscriptions != nil {
		c.errs = append(c.errs, o.Subscriptions.validate())
	}
	if o.Sessions != nil {
		c.errs = append(c.errs, o.Sessions.validate())
	}
	if o.NodeID != "" && !validNodeID(o.NodeID) {
		c.bad("Options.NodeID must be 1 to %d characters of [A-Za-z0-9_-]", maxNodeIDLen)
	}
	for i, h := range o.AllowedHosts {
		if h != "*" && (h == "" || hostcheck.Name(h) != strings.ToLower(h)) {
			c.bad("Options.AllowedHosts[%d] %q must be a host name or IP address without port or brackets, or \"*\"", i, h)
		}
	}
	for i, origin := range o.AllowedOrigins {
		if _, err := normalOrigin(origin); err != nil {
			c.bad("Options.AllowedOrigins[%d] %q: %v", i, origin, err)
		}
	}
	return errors.Join(c.errs...)
}

// normalOrigin returns the serialisation of an origin that browsers send
// in the Origin header (RFC 6454): scheme://host[:port], scheme and host
// in lower case, without the scheme's default port. Alongside exact
// values it accepts a trailing "/" and upper case, and rejects a path,
// query, fragment or user information, which no Origin header carries,
// and "null", which names no origin. "*" is returned as is.
func normalOrigin(origin string) (string, error) {
	if origin == "*" {
		return origin, nil
	}
	u, err := url.Parse(origin)
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.Scheme == "" || u.Opaque != "" || u.Host == "":
		return "", errors.New("must be scheme://host[:port]")
	case u.User != nil:
		return "", errors.New("must not carry user information")
	case u.Path != "" && u.Path != "/", u.RawQuery != "" || u.ForceQuery, u.Fragment != "":
		return "", errors.New("must not have a path, query or fragment")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// validate reports every problem of the subscription options as given
// (before defaults), joined into one error, or nil.
func (o *SubscriptionOptions) validate() error {
	var c optionChecker
	if o.Authorizer == nil {
		c.bad("SubscriptionOptions.Authorizer is required (use AllowSubscriptions to accept every caller)")
	}
	c.counts("SubscriptionOptions",
		named{"MaxSubscriptions", int64(o.MaxSubscriptions)},
		named{"MaxPerTenant", int64(o.MaxPerTenant)},
		named{"MaxPerPrincipal", int64(o.MaxPerPrincipal)})
	c.durations("SubscriptionOptions",
		named{"AuthorizationTimeout", int64(o.AuthorizationTimeout)},
		named{"MaxLifetime", int64(o.MaxLifetime)},
		named{"WriteTimeout", int64(o.WriteTimeout)})
	// A narrower bound set above a wider one can never be reached.
	if o.MaxPerTenant > 0 && o.MaxSubscriptions > 0 && o.MaxPerTenant > o.MaxSubscriptions {
		c.bad("SubscriptionOptions.MaxPerTenant (%d) exceeds MaxSubscriptions (%d)", o.MaxPerTenant, o.MaxSubscriptions)
	}
	if o.MaxPerPrincipal > 0 && o.MaxPerTenant > 0 && o.MaxPerPrincipal > o.MaxPerTenant {
		c.bad("SubscriptionOptions.MaxPerPrincipal (%d) exceeds MaxPerTenant (%d)", o.MaxPerPrincipal, o.MaxPerTenant)
	}
	return errors.Join(c.errs...)
}

// named is a numeric option and its name.
type named struct {
	name string
	v    int64
}

// optionChecker collects the problems of a set of options.
type optionChecker struct{ errs []error }

func (c *optionChecker) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("server: "+format, args...))
}

// counts reports each of the options of struct typ that is negative.
func (c *optionChecker) counts(typ string, opts ...named) {
	for _, o := range opts {
		if o.v < 0 {
			c.bad("%s.%s must not be negative (zero means the default), got %d", typ, o.name, o.v)
		}
	}
}

// durations is counts for time.Duration options, printed as durations.
func (c *optionChecker) durations(typ string, opts ...named) {
	for _, o := range opts {
		if o.v < 0 {
			c.bad("%s.%s must not be negative (zero means the default), got %v", typ, o.name, time.Duration(o.v))
		}
	}
}
