package oauthclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// rig is an MCP server protected by package oauth, trusting a test issuer,
// on real loopback HTTP. Tool "echo" needs no scope; tool "publish" needs
// reports:write, which the metadata does not advertise (step-up).
type rig struct {
	iss *testissuer.Issuer
	url string // the MCP endpoint

	mu     sync.Mutex
	paths  []string // every path the MCP server host was asked for
	status []int    // the status of each
}

func newRig(t *testing.T, resource string) *rig {
	t.Helper()
	iss := testissuer.New(t)
	return newRigFor(t, resource, iss, iss.URL, iss.JWKSURL(), nil)
}

// newRigWith is newRig with the resource server's options changed by
// mutate.
func newRigWith(t *testing.T, resource string, mutate func(*oauth.Options)) *rig {
	t.Helper()
	iss := testissuer.New(t)
	return newRigFor(t, resource, iss, iss.URL, iss.JWKSURL(), mutate)
}

// newRigFor is newRig with the authorization server issuer (whose keys are
// at jwksURL) named in the metadata instead of the test issuer, and the
// resource server's options changed by mutate (when not nil); r.iss is
// iss, which may be nil.
func newRigFor(t *testing.T, resource string, iss *testissuer.Issuer, issuer, jwksURL string, mutate func(*oauth.Options)) *rig {
	t.Helper()
	r := &rig{iss: iss}
	hs := httptest.NewUnstartedServer(nil)
	r.url = "http://" + hs.Listener.Addr().String() + "/mcp"
	if resource == "" {
		resource = r.url
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "rig", Version: "1.0.0"})
	for _, name := range []string{"echo", "publish"} {
		server.AddTool(ep, &mcp.Tool{Name: name}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, struct{}{}, nil
		})
	}
	opts := oauth.Options{
		Resource: resource, Issuer: issuer, JWKSURL: jwksURL,
		ToolScopes:      map[string][]string{"publish": {"reports:write"}},
		ScopesSupported: []string{"mcp:basic"},
	}
	if mutate != nil {
		mutate(&opts)
	}
	rs, err := oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: rs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h := rs.WithMetadata(srv)
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, req)
		r.mu.Lock()
		r.paths = append(r.paths, req.Method+" "+req.URL.Path)
		r.status = append(r.status, sw.status)
		r.mu.Unlock()
	})
	hs.Start()
	t.Cleanup(hs.Close)
	return r
}

// seen returns the requests the MCP server host has served.
func (r *rig) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// clock is an injectable clock for token expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// authorizer returns an Authorizer for the rig whose browser is
// testissuer.Approve, with opts as the base.
func (r *rig) authorizer(t *testing.T, opts oauthclient.Options) *oauthclient.Authorizer {
	t.Helper()
	if opts.OpenURL == nil {
		opts.OpenURL = testissuer.Approve
	}
	if opts.RedirectTimeout == 0 {
		opts.RedirectTimeout = 10 * time.Second
	}
	az, err := oauthclient.New(r.url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return az
}

// mcpClient connects a client whose transport is az.
func (r *rig) mcpClient(t *testing.T, az *oauthclient.Authorizer) *client.Client {
	t.Helper()
	c, err := client.New(r.url, client.Options{Transport: az})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Connect(t.Context()); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// statuses returns the status of each request the MCP server host served.
func (r *rig) statuses() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.status...)
}
