package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/taskwire/taskwire/server"
)

// MaxFileBytes bounds what Decode reads.
const MaxFileBytes = 1 << 20

// fileEntry is one schedule of a schedules file.
type fileEntry struct {
	Name      string          `json:"name"`
	Endpoint  string          `json:"endpoint"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Principal string          `json:"principal"`
	Tenant    string          `json:"tenant"`
	Every     string          `json:"every"`
	Cron      string          `json:"cron"`
	CatchUp   bool            `json:"catchUp"`
}

// Decode reads a schedules file: a JSON object {"schedules": [...]} whose
// entries have the members name, tool, arguments (an object), principal,
// tenant (default: the principal), every (a Go duration such as "1h") or
// cron, and optionally endpoint and catchUp. Unknown members, a file over
// MaxFileBytes and trailing data are errors; every schedule's problems are
// reported at once, as by Check.
//
//	{"schedules": [
//	  {"name": "nightly-sales", "tool": "reports.export", "arguments": {"month": "current"},
//	   "principal": "reports-bot", "cron": "0 2 * * *", "catchUp": true}
//	]}
func Decode(r io.Reader) ([]Schedule, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("schedule: reading the schedules: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("schedule: the schedules are larger than %d bytes", MaxFileBytes)
	}
	var file struct {
		Schedules []fileEntry `json:"schedules"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("schedule: the schedules are not valid: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schedule: the schedules are followed by more data")
	}
	out := make([]Schedule, 0, len(file.Schedules))
	var bad []error
	for _, e := range file.Schedules {
		s := Schedule{Name: e.Name, Endpoint: e.Endpoint, Tool: e.Tool, Arguments: e.Arguments, Cron: e.Cron, CatchUp: e.CatchUp,
			Identity: server.Identity{Principal: e.Principal, Tenant: e.Tenant}}
		if s.Identity.Tenant == "" {
			s.Identity.Tenant = e.Principal
		}
		if e.Every != "" {
			d, err := time.ParseDuration(e.Every)
			if err != nil {
				bad = append(bad, fmt.Errorf("schedule %q: every %q is not a duration such as 1h or 15m", e.Name, e.Every))
				continue
			}
			s.Every = d
		}
		out = append(out, s)
	}
	if err := Check(out); err != nil {
		bad = append(bad, err)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	return out, nil
}
