package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/node/nodecmd"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/skills"
	"github.com/taskwire/taskwire/skills/skillserver"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/sqlite"
)

// program is taskwire's node command line (serve, worker, migrate): the
// demo endpoint with its inline tools and the durable demo tools, whose
// reports.generate writes to --reports-dir.
func program() nodecmd.Program {
	return nodecmd.Program{
		Name:     "taskwire",
		Version:  version,
		Serves:   "the demo MCP endpoint",
		Endpoint: demoEndpoint,
		// Demo only: every admitted caller may listen for task
		// notifications; the store still authorizes each lookup.
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
		Flags:         programFlags,
	}
}

// programFlags defines --reports-dir (and, for serve, --skills), and
// returns the function that adds the durable demo tools writing there
// (and the skills) to the node's configuration.
func programFlags(cmd string, fs *flag.FlagSet) func(*node.Config) error {
	dir := fs.String("reports-dir", "", "`directory` for reports.generate's files (default reports/ beside a SQLite file, else in the working directory)")
	var skillsDir *string
	if cmd == "serve" {
		skillsDir = fs.String("skills", "", "serve the skills of `DIR` (each subdirectory with a SKILL.md, or DIR itself) with the Skills extension")
	}
	return func(cfg *node.Config) error {
		if skillsDir != nil && *skillsDir != "" {
			set, err := skills.LoadDir(*skillsDir, skills.Options{})
			if err != nil {
				return fmt.Errorf("--skills %s: %w", *skillsDir, err)
			}
			skillserver.Register(cfg.Endpoint, set)
		}
		d := *dir
		if d == "" {
			d = defaultReportsDir(cfg.StoreSpec)
		}
		cfg.Tools = durableTools(d)
		cfg.WorkerNote = "; reports are written to " + d
		return nil
	}
}

// defaultReportsDir is where reports.generate writes its files unless
// --reports-dir says otherwise: reports/ beside a SQLite file, or in the
// working directory.
func defaultReportsDir(s node.StoreSpec) string {
	if s.Kind == store.SQLite && s.Path != sqlite.MemoryPath {
		return filepath.Join(filepath.Dir(s.Path), "reports")
	}
	return "reports"
}
