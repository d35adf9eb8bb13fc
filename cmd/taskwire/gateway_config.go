package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/taskwire/taskwire/gateway"
)

// maxConfigBytes bounds the --config file.
const maxConfigBytes = 1 << 20

// gatewayConfig is the --config file of taskwire gateway: JSON, per-tool
// settings in order, the first entry matching a tool applying to it:
//
//	{"tools": [
//	  {"match": "reports.*", "task": true, "retry": true, "timeout": "2h", "maxAttempts": 5},
//	  {"match": "search", "timeout": "5s"}
//	]}
//
// Unknown members are refused, so that a typo does not pass silently.
type gatewayConfig struct {
	Tools []struct {
		Match       string `json:"match"`
		Task        *bool  `json:"task"`
		Retry       *bool  `json:"retry"`
		Timeout     string `json:"timeout"`
		MaxAttempts int    `json:"maxAttempts"`
	} `json:"tools"`
}

// readGatewayConfig reads the --config file into gateway.ToolSettings;
// its errors name the file and, for a bad entry, the entry.
func readGatewayConfig(path string) ([]gateway.ToolSettings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("--config %s: larger than %d bytes", path, maxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cfg gatewayConfig
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("--config %s: more than one JSON value", path)
	}
	var (
		out  []gateway.ToolSettings
		errs []error
	)
	for i, t := range cfg.Tools {
		ts := gateway.ToolSettings{Match: t.Match, Task: t.Task, Retry: t.Retry, MaxAttempts: t.MaxAttempts}
		if t.Timeout != "" {
			d, err := time.ParseDuration(t.Timeout)
			if err != nil {
				errs = append(errs, fmt.Errorf("--config %s: tools[%d]: timeout: %w", path, i, err))
			}
			ts.Timeout = d
		}
		out = append(out, ts)
	}
	return out, errors.Join(errs...)
}
