package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/task"
)

// Console configures the operator console (package console) on the admin
// listener, mounted at /console when Token is set.
type Console struct {
	// Token is the operator token (at least console.MinTokenLen bytes);
	// nil: no console.
	Token []byte
	// ShowArguments shows tasks' tool arguments on the task pages.
	ShowArguments bool
	// Scope is the operator scope of access tokens verified by OAuth.
	Scope string
	// OAuth, if set, is the node's resource server: the console also
	// admits its access tokens that grant Scope. Nil: the operator
	// token only.
	OAuth *oauth.ResourceServer
}

// newConsole returns the console of st, or nil when cfg has no token or
// st is not an operator store.
func newConsole(cfg Console, st any, sched *schedule.Scheduler, logger *slog.Logger) (*console.Console, error) {
	if cfg.Token == nil {
		return nil, nil
	}
	src, ok := st.(backend.OperatorSource)
	if !ok {
		return nil, errors.New("the store does not support the console")
	}
	opts := console.Options{Store: src.Operator(), Token: cfg.Token, ShowArguments: cfg.ShowArguments, Logger: logger,
		OAuth: cfg.OAuth, OperatorScope: cfg.Scope}
	if g, ok := st.(backend.GaugeSource); ok {
		opts.Gauges = g
	}
	if sched != nil {
		opts.Schedules = sched
	}
	if m, ok := st.(task.Manager); ok {
		opts.Events = m.EventPublisher()
	}
	return console.New(opts)
}

// consoleHandler is c as the admin listener's handler, nil when c is.
func consoleHandler(c *console.Console) http.Handler {
	if c == nil {
		return nil
	}
	return c
}

// printConsole says where the console is, or why it is off.
func printConsole(w io.Writer, name, adminAddr string, on bool) {
	switch {
	case adminAddr == "":
	case on:
		fmt.Fprintf(w, "%s: operator console at http://%s/console\n", name, adminAddr)
	default:
		fmt.Fprintln(w, name+": operator console off: no operator token (--admin-token-file or TASKWIRE_ADMIN_TOKEN)")
	}
}
