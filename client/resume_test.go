package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// taskFront is a front over a taskwire server that serves 2025-11-25
// tasks in its sessions (and 2026-07-28, which the clients here do not
// speak).
func taskFront(t *testing.T) *front {
	return newFrontOn(t, rigOptions{versions: []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125}})
}

// keptClient is a 2025-11-25 client that leaves its session open on Close.
func keptClient(t *testing.T, url string, resume *client.SessionResume) *client.Client {
	return newClient(t, url, client.Options{
		ProtocolVersions: []string{mcp.ProtocolVersion20251125}, KeepSession: true, ResumeSession: resume,
	})
}

// TestResumeSession: a client that keeps its session on Close sends no
// DELETE; a second client given its Session takes the session up without
// initialize and follows the task the first one created there, then
// keeps the session too.
func TestResumeSession(t *testing.T) {
	f := taskFront(t)
	ctx := testContext(t)
	c1 := keptClient(t, f.url, nil)
	if id, v := c1.Session(); id != "" || v != "" {
		t.Errorf("Session before Connect: %q %q, want none", id, v)
	}
	res := startReport(t, c1)
	id, version := c1.Session()
	if id == "" || version != mcp.ProtocolVersion20251125 {
		t.Fatalf("Session: %q %q, want an ID and 2025-11-25", id, version)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := keptClient(t, f.url, &client.SessionResume{ID: id, ProtocolVersion: version})
	if _, err := f.rig.mem.Complete(res.Task.ID(), &mcp.CallToolResult{StructuredContent: []byte(`{"rows":3}`)}, "done"); err != nil {
		t.Fatal(err)
	}
	out, err := c2.Task(res.Task.ID()).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"rows":3}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if gotID, gotV := c2.Session(); gotID != id || gotV != version {
		t.Errorf("resumed Session changed: %v", gotV)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	want := seq(opened("s1"), post(mcp.MethodToolsList, "s1", 200), post(mcp.MethodToolsCall, "s1", 200),
		post(mcp.MethodTasksResult, "s1", 200))
	if diff := cmp.Diff(want, f.requests(http.MethodPost)); diff != "" {
		t.Errorf("POSTs (-want +got):\n%s", diff)
	}
	if d := f.requests(http.MethodDelete); len(d) != 0 {
		t.Errorf("DELETEs %+v, want none: both clients keep the session", d)
	}
	gets := f.requests(http.MethodGet)
	if diff := cmp.Diff([]wireReq{{Verb: http.MethodGet, Session: "s1", Status: 200}}, gets[len(gets)-1:]); diff != "" {
		t.Errorf("the resumed client's session stream (-want +got):\n%s", diff)
	}
}

// TestResumeForgottenSession: a resumed session that the server no longer
// knows (it restarted) gets 404 on the first request, which opens a new
// session and is sent once more in it, as for any session; Close then
// ends the new session unless KeepSession.
func TestResumeForgottenSession(t *testing.T) {
	f := taskFront(t)
	ctx := testContext(t)
	id, version := keptSession(t, ctx, f.url)
	f.restart(t)
	c2 := newClient(t, f.url, client.Options{ProtocolVersions: []string{mcp.ProtocolVersion20251125},
		ResumeSession: &client.SessionResume{ID: id, ProtocolVersion: version}})
	if err := add(ctx, c2); err != nil {
		t.Fatalf("call in a forgotten session: %v", err)
	}
	if newID, _ := c2.Session(); newID == id || newID == "" {
		t.Error("Session after renewal: want a new session ID")
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	want := seq(opened("s1"), post(mcp.MethodToolsList, "s1", 200), post(mcp.MethodToolsCall, "s1", 200),
		post(mcp.MethodToolsList, "s1", 404), opened("s2"), post(mcp.MethodToolsList, "s2", 200),
		post(mcp.MethodToolsCall, "s2", 200))
	if diff := cmp.Diff(want, f.requests(http.MethodPost)); diff != "" {
		t.Errorf("POSTs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]wireReq{{Verb: http.MethodDelete, Session: "s2", Status: 200}}, f.requests(http.MethodDelete)); diff != "" {
		t.Errorf("DELETEs (-want +got):\n%s", diff)
	}
}

// keptSession opens a session at url with a call in it, closes its client
// keeping it, and returns its ID and revision.
func keptSession(t *testing.T, ctx context.Context, url string) (id, version string) {
	t.Helper()
	c := keptClient(t, url, nil)
	if err := add(ctx, c); err != nil {
		t.Fatal(err)
	}
	id, version = c.Session()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return id, version
}

// TestEndKeptSession: EndSession ends a kept session with DELETE, where
// Close would have left it open; a resumed client ends the session it
// took up.
func TestEndKeptSession(t *testing.T) {
	f := taskFront(t)
	ctx := testContext(t)
	id, version := keptSession(t, ctx, f.url)
	c2 := keptClient(t, f.url, &client.SessionResume{ID: id, ProtocolVersion: version})
	if err := add(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if err := c2.EndSession(); err != nil {
		t.Fatal(err)
	}
	if err := c2.EndSession(); err != nil { // closed: nothing more is sent
		t.Fatal(err)
	}
	if diff := cmp.Diff([]wireReq{{Verb: http.MethodDelete, Session: "s1", Status: 200}}, f.requests(http.MethodDelete)); diff != "" {
		t.Errorf("DELETEs (-want +got):\n%s", diff)
	}
}

// TestResumeSessionOptions: ResumeSession is validated in full at New.
func TestResumeSessionOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		resume   client.SessionResume
		want     []string // parts of the error; none: valid
	}{
		{name: "valid", resume: client.SessionResume{ID: "abc-123", ProtocolVersion: mcp.ProtocolVersion20250618}},
		{name: "empty", resume: client.SessionResume{}, want: []string{"ResumeSession.ID", "not a 2025 revision"}},
		{name: "control character", resume: client.SessionResume{ID: "a\nb", ProtocolVersion: mcp.ProtocolVersion20251125},
			want: []string{"ResumeSession.ID"}},
		{name: "too long", resume: client.SessionResume{ID: strings.Repeat("a", client.MaxSessionIDLen+1), ProtocolVersion: mcp.ProtocolVersion20251125},
			want: []string{"ResumeSession.ID"}},
		{name: "2026", resume: client.SessionResume{ID: "a", ProtocolVersion: mcp.LatestProtocolVersion},
			want: []string{"not a 2025 revision"}},
		{name: "not listed", versions: []string{mcp.ProtocolVersion20251125},
			resume: client.SessionResume{ID: "a", ProtocolVersion: mcp.ProtocolVersion20250618}, want: []string{"not listed in ProtocolVersions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.resume
			c, err := client.New("http://127.0.0.1:1/mcp", client.Options{ProtocolVersions: tc.versions, ResumeSession: &r})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("New accepted the options")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
