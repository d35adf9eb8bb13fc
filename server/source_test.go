package server_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address local.
func clientFrom(t *testing.T, local string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: connWait}
}

func TestSourceByAddress(t *testing.T) {
	base := server.AdmissionFunc(func(context.Context, *server.AdmissionRequest) (server.Identity, error) {
		return server.Identity{Tenant: "t", Source: "given"}, nil
	})
	tests := []struct{ remote, want string }{
		{"192.0.2.1:443", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::"},
		{"[2001:db8:1:2:ffff::1]:80", "2001:db8:1:2::"}, // the same /64
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[fe80::1%eth0]:80", "fe80::"},
		{"@", "given"}, // not an address: the controller's Source stays
	}
	a := server.SourceByAddress(base)
	var got, want []string
	for _, tt := range tests {
		id, err := a.Admit(context.Background(), &server.AdmissionRequest{RemoteAddr: tt.remote, Header: http.Header{}})
		if err != nil {
			t.Fatal(err)
		}
		got, want = append(got, tt.remote+" "+id.Source), append(want, tt.remote+" "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Source (-want +got):\n%s", diff)
	}
}

// TestSessionsPerSource: with SourceByAddress, rotating Bearer names (and
// anonymous callers) from one address share one caller's
// MaxPerPrincipal sessions, while another address still opens sessions;
// ending a session frees its slot.
func TestSessionsPerSource(t *testing.T) {
	srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
		o.Admission = server.SourceByAddress(server.DevAdmission())
		o.Sessions = &server.SessionOptions{MaxPerPrincipal: 2}
	})
	c := newLegacyRig(t, srv)
	initialize := func(hc *http.Client, auth string) (int, string) {
		cl := c.clone()
		cl.auth, cl.sid = auth, ""
		req := cl.newPost(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Mcp-Session-Id")
	}
	local := clientFrom(t, "127.0.0.1")
	var got []int
	var first string
	for i, auth := range []string{"Bearer n1", "Bearer n2", "Bearer n3", ""} {
		status, sid := initialize(local, auth)
		if i == 0 {
			first = sid
		}
		got = append(got, status)
	}
	if diff := cmp.Diff([]int{200, 200, 429, 429}, got); diff != "" {
		t.Errorf("initializes from one address (-want +got):\n%s", diff)
	}
	if status, _ := initialize(clientFrom(t, "127.0.0.2"), "Bearer n3"); status != http.StatusOK {
		t.Errorf("initialize from another address: HTTP %d", status)
	}
	del, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	del.Header.Set("Mcp-Session-Id", first)
	del.Header.Set("Authorization", "Bearer n1")
	del.Header.Set("MCP-Protocol-Version", "2025-11-25")
	res, err := local.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if status, _ := initialize(local, "Bearer n4"); status != http.StatusOK {
		t.Errorf("initialize after a DELETE (HTTP %d) freed a slot: HTTP %d", res.StatusCode, status)
	}
}

// TestUnusedSessionsExpire: a session no request names after initialize
// ends after a minute, so a flood of bare initializes that fills the store
// (here two sessions, anonymous callers) stops refusing new sessions a
// minute later, also on a node restarted over the same store; a session
// that was used keeps its IdleTimeout.
func TestUnusedSessionsExpire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	open := func() *legacyClient {
		st, err := sqlite.Open(t.Context(), sqlite.Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
			o.Sessions = &server.SessionOptions{Store: st.Sessions(), MaxStored: 3, MaxPerPrincipal: 1, IdleTimeout: 30 * time.Minute}
			server.SetClockForTest(o, clock.Now)
		})
		return newLegacyRig(t, srv)
	}
	c := open()
	used := c.clone()
	used.mustInitialize("2025-11-25", `{}`)
	var got []int
	for range 3 { // the flood: two fill the store, the third is refused
		got = append(got, c.clone().initialize("2025-11-25", `{}`).status)
	}
	if diff := cmp.Diff([]int{200, 200, 503}, got); diff != "" {
		t.Fatalf("the flood (-want +got):\n%s", diff)
	}

	restarted := open() // the same store, a new node
	clock.Advance(time.Minute + time.Second)
	if rep := restarted.clone().initialize("2025-11-25", `{}`); rep.status != http.StatusOK {
		t.Errorf("initialize a minute after the flood, on a restarted node: HTTP %d, %s", rep.status, rep.body)
	}
	used.url = restarted.url
	clock.Advance(20 * time.Minute)
	if rep := used.request("ping", ""); rep.status != http.StatusOK {
		t.Errorf("a used session 21 minutes on, within its 30 min IdleTimeout: HTTP %d", rep.status)
	}
	unused := restarted.clone()
	if rep := unused.initialize("2025-11-25", `{}`); rep.status != http.StatusOK {
		t.Fatalf("initialize: HTTP %d", rep.status)
	}
	clock.Advance(time.Minute + time.Second)
	if rep := unused.request("ping", ""); rep.status != http.StatusNotFound {
		t.Errorf("a session unused for a minute after initialize: HTTP %d, want 404", rep.status)
	}
}

// TestListenPerSource: with SourceByAddress, rotating Bearer names and
// anonymous callers from one address share one caller's MaxPerPrincipal
// listens, while another address still gets them.
func TestListenPerSource(t *testing.T) {
	r, _ := newListenRig(t, &server.SubscriptionOptions{MaxPerPrincipal: 2}, func(r *taskRig, _ *server.Options) {
		r.admit = server.SourceByAddress(server.DevAdmission())
	})
	ts := httptest.NewServer(r.srv)
	defer ts.Close()
	defer r.srv.Close() // before ts.Close, which waits for the streams
	url := ts.URL + "/mcp"
	local, other := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")

	var open []*http.Response
	defer func() {
		for _, resp := range open {
			resp.Body.Close()
		}
	}()
	var got []int
	for i, who := range []string{"n1", "n2", "n3", ""} {
		resp := openHTTPListen(t, local, url, "1"+string(rune('0'+i)), who, "tid-1")
		got = append(got, resp.StatusCode)
		open = append(open, resp)
	}
	resp := openHTTPListen(t, other, url, "20", "n3", "tid-1")
	got = append(got, resp.StatusCode)
	open = append(open, resp)
	if diff := cmp.Diff([]int{200, 200, 429, 429, 200}, got); diff != "" {
		t.Errorf("listens: four from one address, one from another (-want +got):\n%s", diff)
	}
}
