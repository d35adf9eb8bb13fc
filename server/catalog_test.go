package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// liveRig is a server whose endpoint "live" (path /mcp) serves 2025
// sessions and 2026-07-28 listens, over loopback HTTP.
type liveRig struct {
	srv *server.Server
	ep  *server.Endpoint
	url string
}

func newLiveRig(t *testing.T, epOpts server.EndpointOptions, register func(*server.Endpoint), mutate func(*server.Options)) *liveRig {
	t.Helper()
	epOpts.Path, epOpts.Name, epOpts.Version = "/mcp", "live", "1.0.0"
	ep := server.NewEndpoint(epOpts)
	if register != nil {
		register(ep)
	}
	if err := ep.UpdateTools(server.RemoveTool("x")); !errors.Is(err, server.ErrEndpointNotServed) {
		t.Errorf("UpdateTools before New = %v, want ErrEndpointNotServed", err)
	}
	opts := server.Options{
		Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission(), NodeID: "n1",
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Hour)},
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	select {
	case <-ep.Served():
	default:
		t.Error("Served not closed after New")
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return &liveRig{srv: srv, ep: ep, url: hs.URL + "/mcp"}
}

// post sends a 2026-07-28 request over loopback and parses the answer.
func (r *liveRig) post(t *testing.T, method, params string) *mcptest.Response {
	t.Helper()
	params = strings.TrimSuffix(strings.TrimSpace(params), "}")
	if params != "{" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `"_meta":` + metaJSON + `}}`
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	json.Unmarshal([]byte(params+`"x":0}`), &p)
	if n := p.Name + p.URI; n != "" {
		req.Header.Set("Mcp-Name", n)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf strings.Builder
	bufio.NewReader(res.Body).WriteTo(&buf)
	out, err := mcptest.ParseResponse(res.StatusCode, res.Header, []byte(buf.String()))
	if err != nil {
		t.Fatalf("%s: %v (%s)", method, err, buf.String())
	}
	return out
}

// listedNames returns the names (or URIs) of a list result's items and its
// next cursor.
func listedNames(t *testing.T, res *mcptest.Response, member string) ([]string, string) {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("list: %+v", res.Error)
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal(res.Result, &page); err != nil {
		t.Fatal(err)
	}
	var items []struct {
		Name        string `json:"name"`
		URI         string `json:"uri"`
		URITemplate string `json:"uriTemplate"`
		Description string `json:"description"`
	}
	json.Unmarshal(page[member], &items)
	var next string
	json.Unmarshal(page["nextCursor"], &next)
	out := []string{}
	for _, it := range items {
		s := it.Name
		if it.Description != "" {
			s += ": " + it.Description
		}
		out = append(out, s)
	}
	return out, next
}

// listAll follows a list's pages (at most ten) and returns every item's
// name (see listedNames).
func (r *liveRig) listAll(t *testing.T, method, member string) []string {
	t.Helper()
	var all []string
	cursor := ""
	for range 10 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		page, next := listedNames(t, r.post(t, method, params), member)
		all = append(all, page...)
		if cursor = next; cursor == "" {
			return all
		}
	}
	t.Fatalf("%s: more than ten pages", method)
	return nil
}

// openModernListen opens a subscriptions/listen over loopback with the
// raw filter and returns its messages' methods and params.
func openModernListen(t *testing.T, url, filter string) <-chan legacyMsg {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":` + filter + `,"_meta":` + metaJSON + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", mcp.MethodSubscriptionsListen)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("listen: HTTP %d", res.StatusCode)
	}
	events, wait := sseMessages(res)
	t.Cleanup(func() { cancel(); wait() })
	return events
}

// noEvent checks that nothing arrives on a stream for a moment.
func noEvent(t *testing.T, events <-chan legacyMsg) {
	t.Helper()
	select {
	case m := <-events:
		t.Errorf("unexpected event %s %s", m.Method, m.Params)
	case <-time.After(100 * time.Millisecond):
	}
}

func textTool(name string) server.ToolHandler {
	return func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
	}
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// TestUpdateToolsBothEras: tools added, redefined and removed while the
// endpoint is served are listed, called and refused in both eras, and
// each batch is announced once on the 2025 GET stream and on a
// 2026-07-28 listen that asked for toolsListChanged.
func TestUpdateToolsBothEras(t *testing.T) {
	r := newLiveRig(t, server.EndpointOptions{}, func(ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "echo", Description: "old"}, func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
			return nil, EchoOutput{Echo: in.Text}, nil
		})
	}, nil)
	legacy := &legacyClient{t: t, url: r.url, auth: "Bearer alice"}
	legacy.mustInitialize("2025-06-18", `{}`)
	res, getEvents := openGetStream(t, legacy)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", res.StatusCode)
	}
	listen := openModernListen(t, r.url, `{"toolsListChanged":true,"promptsListChanged":true}`)
	ack := next(t, listen)
	if ack.Method != mcp.NotificationSubscriptionsAcknowledged || !strings.Contains(string(ack.Params), `"notifications":{"toolsListChanged":true}`) {
		t.Fatalf("acknowledgement %s %s: want toolsListChanged only (no prompts here)", ack.Method, ack.Params)
	}

	// An invalid batch changes nothing and announces nothing.
	err := r.ep.UpdateTools(server.PutRawTool(&mcp.Tool{Name: "added", InputSchema: objectSchema}, textTool("added")),
		server.RemoveTool("missing"), server.PutRawTool(&mcp.Tool{Name: "bad name"}, textTool("x")))
	if err == nil || !strings.Contains(err.Error(), `"missing"`) || !strings.Contains(err.Error(), `"bad name"`) {
		t.Errorf("invalid batch: %v, want both problems named", err)
	}
	noEvent(t, listen)

	if err := r.ep.UpdateTools(
		server.PutRawTool(&mcp.Tool{Name: "added", Description: "new tool", InputSchema: objectSchema}, textTool("added")),
		server.RedefineTool(&mcp.Tool{Name: "echo", Description: "new", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"text":{"type":"string","maxLength":3}},"required":["text"]}`)}),
	); err != nil {
		t.Fatal(err)
	}
	if m := next(t, listen); m.Method != mcp.NotificationToolsListChanged || !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"L1"`) {
		t.Errorf("listen: %s %s, want tools/list_changed with the subscription ID", m.Method, m.Params)
	}
	noEvent(t, listen) // one batch, one notification
	if m := next(t, getEvents); m.Method != mcp.NotificationToolsListChanged {
		t.Errorf("GET stream: %s, want tools/list_changed", m.Method)
	}

	want := []string{"echo: new", "added: new tool"}
	var defs []string
	for _, tl := range r.ep.Tools() {
		defs = append(defs, tl.Name+": "+tl.Description)
	}
	if diff := cmp.Diff(want, defs); diff != "" {
		t.Errorf("Endpoint.Tools (-want +got):\n%s", diff)
	}
	got, _ := listedNames(t, r.post(t, mcp.MethodToolsList, `{}`), "tools")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("2026 tools/list (-want +got):\n%s", diff)
	}
	rep := legacy.request(mcp.MethodToolsList, `{}`)
	var lres struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	json.Unmarshal(rep.final(t).Result, &lres)
	if len(lres.Tools) != 2 || lres.Tools[0].Description != "new" || lres.Tools[1].Name != "added" {
		t.Errorf("2025 tools/list: %s", rep.body)
	}

	call := r.post(t, mcp.MethodToolsCall, `{"name":"added","arguments":{}}`)
	if call.Error != nil || !strings.Contains(string(call.Result), `"added"`) {
		t.Errorf("call of an added tool: %s", call.Body)
	}
	// The redefined typed tool validates against its new schema.
	call = r.post(t, mcp.MethodToolsCall, `{"name":"echo","arguments":{"text":"toolong"}}`)
	if !strings.Contains(string(call.Result), `"isError":true`) || !strings.Contains(string(call.Result), "Invalid arguments") {
		t.Errorf("call against the new schema: %s", call.Body)
	}
	if rep := legacy.request(mcp.MethodToolsCall, `{"name":"echo","arguments":{"text":"hi"}}`); !strings.Contains(string(rep.final(t).Result), `"echo":"hi"`) {
		t.Errorf("2025 call of the redefined tool: %s", rep.body)
	}

	if err := r.ep.UpdateTools(server.RemoveTool("added")); err != nil {
		t.Fatal(err)
	}
	next(t, listen)
	removed := r.post(t, mcp.MethodToolsCall, `{"name":"added","arguments":{}}`)
	never := r.post(t, mcp.MethodToolsCall, `{"name":"never","arguments":{}}`)
	if removed.Status != never.Status || errorCode(removed) != mcp.CodeInvalidParams ||
		strings.ReplaceAll(string(removed.Body), "added", "never") != string(never.Body) {
		t.Errorf("removed tool answered\n%s\nunknown tool answered\n%s", removed.Body, never.Body)
	}
	lrem := legacy.request(mcp.MethodToolsCall, `{"name":"added","arguments":{}}`).final(t)
	if lrem.Error == nil || lrem.Error.Code != mcp.CodeInvalidParams || lrem.Error.Message != `Invalid params: unknown tool "added"` {
		t.Errorf("2025 call of a removed tool: %+v", lrem.Error)
	}
	// A tool registered before New and removed comes back when redefined.
	if err := r.ep.UpdateTools(server.RemoveTool("echo")); err != nil {
		t.Fatal(err)
	}
	if err := r.ep.UpdateTools(server.RedefineTool(&mcp.Tool{Name: "echo", Description: "back", InputSchema: objectSchema})); err != nil {
		t.Fatal(err)
	}
	got, _ = listedNames(t, r.post(t, mcp.MethodToolsList, `{}`), "tools")
	if diff := cmp.Diff([]string{"echo: back"}, got); diff != "" {
		t.Errorf("after remove and redefine (-want +got):\n%s", diff)
	}
}

// TestDynamicToolsStartEmpty: an endpoint with DynamicTools and no tool at
// New serves tools/list (empty), advertises tools, and pages through the
// tools added later with the endpoint's PageSize; a CatalogPolicy hides
// added tools as it hides registered ones.
func TestDynamicToolsStartEmpty(t *testing.T) {
	r := newLiveRig(t, server.EndpointOptions{DynamicTools: true, PageSize: 2}, nil, func(o *server.Options) {
		o.CatalogPolicy = hideTool("t3")
	})
	disc := r.post(t, mcp.MethodServerDiscover, `{}`)
	if !strings.Contains(string(disc.Result), `"tools":{}`) {
		t.Errorf("discover without tools capability: %s", disc.Result)
	}
	if got, next := listedNames(t, r.post(t, mcp.MethodToolsList, `{}`), "tools"); len(got) != 0 || next != "" {
		t.Errorf("empty list: %v %q", got, next)
	}
	var changes []server.ToolChange
	for i := range 5 {
		changes = append(changes, server.PutRawTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: objectSchema}, textTool("t")))
	}
	if err := r.ep.UpdateTools(changes...); err != nil {
		t.Fatal(err)
	}
	all := r.listAll(t, mcp.MethodToolsList, "tools")
	if diff := cmp.Diff([]string{"t0", "t1", "t2", "t4"}, all); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if hidden := r.post(t, mcp.MethodToolsCall, `{"name":"t3","arguments":{}}`); hidden.Error == nil || hidden.Error.Message != `Invalid params: unknown tool "t3"` {
		t.Errorf("hidden added tool: %s", hidden.Body)
	}
}

// TestUpdateToolsConcurrent: calls and lists run while tools change
// (checked by the race detector); every call of the stable tool succeeds.
func TestUpdateToolsConcurrent(t *testing.T) {
	r := newLiveRig(t, server.EndpointOptions{}, func(ep *server.Endpoint) {
		ep.AddRawTool(&mcp.Tool{Name: "stable", InputSchema: objectSchema}, textTool("stable"))
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			d := fmt.Sprintf("v%d", i)
			if err := r.ep.UpdateTools(server.PutRawTool(&mcp.Tool{Name: "churn", Description: d, InputSchema: objectSchema}, textTool(d)),
				server.RedefineTool(&mcp.Tool{Name: "stable", Description: d, InputSchema: objectSchema})); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if err := r.ep.UpdateTools(server.RemoveTool("churn")); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for i := 0; i < 40; i++ {
				if res := r.post(t, mcp.MethodToolsCall, `{"name":"stable","arguments":{}}`); res.Error != nil {
					t.Errorf("stable call: %s", res.Body)
					return
				}
				r.post(t, mcp.MethodToolsList, `{}`)
			}
		})
	}
	wg.Wait()
}

// TestDiscoverResourcesSubscribe: server/discover advertises
// resources.subscribe only where listens are served (Options.Subscriptions):
// a server without them answers subscriptions/listen -32601, and a client
// told it may subscribe would find no way to.
func TestDiscoverResourcesSubscribe(t *testing.T) {
	withResource := func(ep *server.Endpoint) {
		ep.AddResource(&mcp.Resource{URI: "file:///notes", Name: "notes"}, func(context.Context, *server.Request) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	for _, tc := range []struct {
		name   string
		mutate func(*server.Options)
		want   string
	}{
		{"with listens", nil, `"resources":{"subscribe":true}`},
		{"without listens", func(o *server.Options) { o.Subscriptions = nil }, `"resources":{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLiveRig(t, server.EndpointOptions{}, withResource, tc.mutate)
			if disc := r.post(t, mcp.MethodServerDiscover, `{}`); !strings.Contains(string(disc.Result), tc.want) {
				t.Errorf("server/discover %s, want %s", disc.Result, tc.want)
			}
		})
	}
}
