// Command client is the conformance client of this module: the official
// MCP conformance suite runs it as
//
//	conformance client --command '<this binary>' --scenario <name>
//
// with the scenario in MCP_CONFORMANCE_SCENARIO, optional scenario data in
// MCP_CONFORMANCE_CONTEXT, and the server URL as the last argument. Each
// scenario is carried out with package client, the way an application
// would; the exit status is 0 when the flow completed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=<name> client <server-url>")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, scenario, url, os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s: %v\n", scenario, err)
		os.Exit(1)
	}
}

var scenarios = map[string]func(ctx context.Context, url, data string) error{
	"initialize":                          basic,
	"tools_call":                          basic,
	"request-metadata":                    listOnly,
	"json-schema-ref-no-deref":            listOnly,
	"json-schema-2020-12-preservation":    schemaEcho,
	"sep-2322-client-request-state":       requestState,
	"http-standard-headers":               everything,
	"http-custom-headers":                 contextCalls,
	"http-invalid-tool-headers":           everyValidTool,
	"elicitation-sep1034-client-defaults": elicitationDefaults,
	"sse-retry":                           basicNoArgs,
	"sep-2640-client-no-prefetch":         listSkills,
	"sep-2640-client-verify-digest":       loadSkills,
	"sep-2640-client-verify-size":         loadSkills,
	"sep-2640-client-verify-frontmatter":  loadSkills,
}

func run(ctx context.Context, scenario, url, data string) error {
	if strings.HasPrefix(scenario, "auth/") {
		return authorized(ctx, scenario, url, data)
	}
	fn, ok := scenarios[scenario]
	if !ok {
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	return fn(ctx, url, data)
}

func newClient(url string, h client.Handlers) (*client.Client, error) {
	return client.New(url, client.Options{
		ClientInfo: mcp.Implementation{Name: "taskwire-conformance-client", Version: "1.0.0"},
		Handlers:   h,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

// withClient connects, runs fn and closes.
func withClient(ctx context.Context, url string, h client.Handlers, fn func(*client.Client) error) error {
	c, err := newClient(url, h)
	if err != nil {
		return err
	}
	err = c.Connect(ctx)
	if err == nil {
		err = fn(c)
	}
	return errors.Join(err, c.Close())
}

// basic lists the tools and calls the first with {a: 2, b: 3}.
func basic(ctx context.Context, url, _ string) error {
	return callFirst(ctx, url, map[string]any{"a": 2, "b": 3})
}

func basicNoArgs(ctx context.Context, url, _ string) error {
	return callFirst(ctx, url, map[string]any{})
}

func callFirst(ctx context.Context, url string, args map[string]any) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		tools, err := c.ListTools(ctx)
		if err != nil || len(tools) == 0 {
			return err
		}
		_, err = c.Call(ctx, tools[0].Name, args)
		return err
	})
}

func listOnly(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		_, err := c.ListTools(ctx)
		return err
	})
}

// schemaEcho sends the focal tool's input schema, as listed, to the echo
// tool.
func schemaEcho(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		focal, err := c.Tool(ctx, "json_schema_2020_12_tool")
		if err != nil {
			return err
		}
		if focal == nil {
			return errors.New("json_schema_2020_12_tool is not listed")
		}
		_, err = c.Call(ctx, "json_schema_echo", map[string]any{"schema": focal.InputSchema})
		return err
	})
}

// requestState answers the MRTR tools' elicitations; while the first
// round is pending it calls an unrelated tool, which must carry none of
// that round's state.
func requestState(ctx context.Context, url, _ string) error {
	var c *client.Client
	unrelatedDone := false
	h := client.Handlers{Elicit: func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if !unrelatedDone {
			unrelatedDone = true
			if _, err := c.Call(ctx, "test_mrtr_unrelated", map[string]any{}); err != nil {
				return nil, err
			}
		}
		return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{"confirmed": true}}, nil
	}}
	return withClient(ctx, url, h, func(cl *client.Client) error {
		c = cl
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
			if _, err := c.Call(ctx, name, map[string]any{}); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
}

// everything exercises every request that carries standard headers.
func everything(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if _, err := c.Call(ctx, t.Name, map[string]any{}); err != nil {
				return err
			}
		}
		resources, err := c.ListResources(ctx)
		if err != nil {
			return err
		}
		for _, r := range resources {
			if _, err := c.ReadResource(ctx, r.URI); err != nil {
				return err
			}
		}
		prompts, err := c.ListPrompts(ctx)
		if err != nil {
			return err
		}
		for _, p := range prompts {
			if _, err := c.GetPrompt(ctx, p.Name, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// contextCalls makes the tool calls the scenario lists in its context.
func contextCalls(ctx context.Context, url, data string) error {
	var sc struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(data), &sc); err != nil {
		return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		for _, tc := range sc.ToolCalls {
			if _, err := c.Call(ctx, tc.Name, tc.Arguments); err != nil {
				return err
			}
		}
		return nil
	})
}

// everyValidTool calls every tool the client kept, with a string for each
// required string argument.
func everyValidTool(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			var s struct {
				Required []string `json:"required"`
			}
			json.Unmarshal(t.InputSchema, &s)
			args := map[string]any{}
			for _, r := range s.Required {
				args[r] = "us-west1"
			}
			if _, err := c.Call(ctx, t.Name, args); err != nil {
				return err
			}
		}
		return nil
	})
}

// elicitationDefaults accepts every form with empty content; the client
// fills in the schema's defaults.
func elicitationDefaults(ctx context.Context, url, _ string) error {
	h := client.Handlers{
		Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: map[string]any{}}, nil
		},
		ApplyElicitationDefaults: true,
	}
	return withClient(ctx, url, h, func(c *client.Client) error {
		_, err := c.Call(ctx, "test_client_elicitation_defaults", map[string]any{})
		return err
	})
}

// conformanceClientMetadataURL is the Client ID Metadata Document URL the
// suite's authorization servers expect (they never fetch it).
const conformanceClientMetadataURL = "https://conformance-test.local/client-metadata.json"

// authorized carries out every auth/* scenario the way an application
// would: an oauthclient.Authorizer as the client's transport, whose
// "browser" (testissuer.Approve) requests the authorization URL and follows
// the redirect, since the suite's servers approve at once; then tools/list
// and a call of the first tool.
// The context may hold a pre-registered client_id and client_secret. The
// machine-to-machine scenarios use a grant instead (machine.go). In
// auth/dpop and auth/dpop-nonce the authorization server advertises DPoP
// with ES256, so the Authorizer (oauthclient.DPoPWhenSupported, the
// default) asks for a DPoP-bound token and sends proofs, nonces included.
func authorized(ctx context.Context, scenario, url, data string) error {
	var sc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if data != "" {
		if err := json.Unmarshal([]byte(data), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := oauthclient.Options{
		ClientID: sc.ClientID, ClientSecret: sc.ClientSecret,
		ClientIDMetadataURL: conformanceClientMetadataURL,
		ClientName:          "taskwire-conformance-client",
		OpenURL:             testissuer.Approve,
		RedirectTimeout:     10 * time.Second,
		Timeout:             5 * time.Second,
		Logger:              logger,
	}
	cleanup, err := machineOptions(scenario, data, &opts)
	if err != nil {
		return err
	}
	defer cleanup()
	az, err := oauthclient.New(url, opts)
	if err != nil {
		return err
	}
	c, err := client.New(url, client.Options{
		ClientInfo: mcp.Implementation{Name: "taskwire-conformance-client", Version: "1.0.0"},
		Transport:  az,
		Logger:     logger,
	})
	if err != nil {
		return err
	}
	err = c.Connect(ctx)
	if err == nil {
		var tools []*mcp.Tool
		if tools, err = c.ListTools(ctx); err == nil && len(tools) > 0 {
			_, err = c.Call(ctx, tools[0].Name, map[string]any{})
		}
	}
	return errors.Join(err, c.Close())
}

// listSkills is a host that connects and builds its skill registry: it
// lists the skills and reads none of their files (no skill is loaded).
func listSkills(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		_, err := c.ListSkills(ctx)
		return err
	})
}

// loadSkills is a host that loads every listed skill and then reads each
// of its files: LoadSkill verifies SKILL.md (size, digest, front matter)
// and a skill that fails is not used, so none of its other files is read.
func loadSkills(ctx context.Context, url, _ string) error {
	return withClient(ctx, url, client.Handlers{}, func(c *client.Client) error {
		entries, err := c.ListSkills(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, e := range entries {
			s, err := c.LoadSkill(ctx, e)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, r := range e.Resources.Files {
				if r.URI == e.URI {
					continue
				}
				if _, err := s.Read(ctx, r.URI); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	})
}
