package skillserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/skills"
	"github.com/taskwire/taskwire/skills/skillserver"
)

const skillMD = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n"

func sources(body, forms string) []skills.Source {
	return []skills.Source{
		{Path: "pdf-processing", Files: map[string][]byte{"SKILL.md": []byte(body), "references/FORMS.md": []byte(forms)}},
		{Path: "git-workflow", Files: map[string][]byte{"SKILL.md": []byte("---\nname: git-workflow\ndescription: Branches\n---\n")}},
		{Path: "acme/refunds", Files: map[string][]byte{"SKILL.md": []byte("---\nname: refunds\ndescription: Refunds\n---\n")}},
	}
}

// newServer serves the skills of srcs on a loopback HTTP server with
// page size 2, so that skills/list has two pages.
func newServer(t *testing.T, srcs []skills.Source) (*server.Server, string) {
	t.Helper()
	set, err := skills.New(skills.Options{}, srcs...)
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "skills-test", Version: "1", PageSize: 2, CacheTTL: time.Minute})
	skillserver.Register(ep, set)
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, hs.URL + "/mcp"
}

func connect(t *testing.T, url string, versions []string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.Options{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}, ProtocolVersions: versions})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHTTPBothEras(t *testing.T) {
	_, url := newServer(t, sources(skillMD, "forms\n"))
	for _, versions := range [][]string{{mcp.LatestProtocolVersion}, {mcp.ProtocolVersion20251125}, {mcp.ProtocolVersion20250618}} {
		t.Run(versions[0], func(t *testing.T) {
			ctx := context.Background()
			c := connect(t, url, versions)
			if c.ProtocolVersion() != versions[0] {
				t.Fatalf("negotiated %s", c.ProtocolVersion())
			}
			entries, err := c.ListSkills(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, e := range entries {
				uris = append(uris, e.URI)
			}
			want := []string{"skill://acme/refunds/SKILL.md", "skill://git-workflow/SKILL.md", "skill://pdf-processing/SKILL.md"}
			if diff := cmp.Diff(want, uris); diff != "" {
				t.Fatalf("listed (-want +got):\n%s", diff)
			}
			e, err := c.GetSkill(ctx, "skill://pdf-processing/SKILL.md")
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.LoadSkill(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if string(s.Manifest) != skillMD {
				t.Errorf("manifest %q", s.Manifest)
			}
			if b, err := s.Read(ctx, "references/FORMS.md"); err != nil || string(b) != "forms\n" {
				t.Errorf("read FORMS.md: %q, %v", b, err)
			}
			if _, err := s.Read(ctx, "references/OTHER.md"); !errors.Is(err, skills.ErrUnlisted) {
				t.Errorf("read of an unlisted file: %v", err)
			}
			kids, err := c.ReadSkillDirectory(ctx, "skill://pdf-processing")
			if err != nil || len(kids) != 2 || kids[1].MIMEType != skills.DirectoryMIMEType {
				t.Errorf("directory: %v, %v", kids, err)
			}
			var rpc *client.RPCError
			if _, err := c.GetSkill(ctx, "skill://nope/SKILL.md"); !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams {
				t.Errorf("unknown skill: %v", err)
			}
			if _, err := c.ReadSkillDirectory(ctx, "skill://pdf-processing/SKILL.md"); !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams {
				t.Errorf("directory read of a file: %v", err)
			}
		})
	}
}

// TestClientRefusesTamperedContent loads entries of one set from a server
// that serves other bytes at the same URIs.
func TestClientRefusesTamperedContent(t *testing.T) {
	ctx := context.Background()
	good, err := skills.New(skills.Options{}, sources(skillMD, "forms\n")...)
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := good.Skill("skill://pdf-processing/SKILL.md")
	tests := []struct {
		name        string
		body, forms string
		file        string
		wantErr     error
	}{
		{"digest of SKILL.md", strings.Replace(skillMD, "Skill body.", "Evil body!!", 1), "forms\n", "", skills.ErrDigestMismatch},
		{"size of SKILL.md", skillMD + "extra\n", "forms\n", "", skills.ErrSizeMismatch},
		{"digest of a file", skillMD, "FORMS\n", "references/FORMS.md", skills.ErrDigestMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newServer(t, sources(tt.body, tt.forms))
			c := connect(t, url, nil)
			s, err := c.LoadSkill(ctx, entry.Entry)
			if tt.file == "" {
				if !errors.Is(err, tt.wantErr) || s != nil {
					t.Fatalf("got %v, %v; want %v", s, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, err := s.Read(ctx, tt.file); !errors.Is(err, tt.wantErr) || b != nil {
				t.Fatalf("got %q, %v; want %v", b, err, tt.wantErr)
			}
		})
	}
	t.Run("front matter", func(t *testing.T) {
		forged := *entry.Entry
		forged.Frontmatter = json.RawMessage(`{"name":"pdf-processing","description":"Exfiltrate credentials"}`)
		_, url := newServer(t, sources(skillMD, "forms\n"))
		if _, err := connect(t, url, nil).LoadSkill(ctx, &forged); !errors.Is(err, skills.ErrFrontmatterMismatch) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("oversize entry", func(t *testing.T) {
		big := *entry.Entry
		big.Resources = skills.Resources{Files: append([]skills.Resource{}, entry.Entry.Resources.Files...)}
		big.Resources.Files[1].Size = skills.LimitSkillBytes
		_, url := newServer(t, sources(skillMD, "forms\n"))
		if _, err := connect(t, url, nil).LoadSkill(ctx, &big); !errors.Is(err, skills.ErrInvalidEntry) {
			t.Fatalf("got %v", err)
		}
	})
}

const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestStdio(t *testing.T) {
	srv, _ := newServer(t, sources(skillMD, "forms\n"))
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"2026-07-28", []string{
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"skills/get","params":{"uri":"skill://git-workflow/SKILL.md","_meta":` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":3,"method":"resources/directory/read","params":{"uri":"skill://acme","_meta":` + modernMeta + `}}`,
		}, []string{`"io.modelcontextprotocol/skills":{"directoryRead":true}`, `"ttlMs":60000`, `"uri":"skill://acme/refunds","name":"refunds","mimeType":"inode/directory"`}},
		{"2025-11-25", []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{"cursor":"bad"}}`,
			`{"jsonrpc":"2.0","id":3,"method":"skills/list"}`,
		}, []string{`"io.modelcontextprotocol/skills":{"directoryRead":true}`, `"code":-32602`, `"nextCursor"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stdioExchange(t, srv, tt.lines)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d responses: %q", len(got), got)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("response %d: %s lacks %s", i+1, got[i], w)
				}
			}
			if tt.name == "2025-11-25" && strings.Contains(got[2], `"ttlMs"`) {
				t.Errorf("a 2025 session got 2026 members: %s", got[2])
			}
		})
	}
}

// stdioExchange sends each line to ServeStdio and returns the responses,
// one per request, in order.
func stdioExchange(t *testing.T, srv *server.Server, lines []string) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), inR, outW, server.StdioOptions{}); outW.Close() }()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	var got []string
	for _, l := range lines {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(l, `"id":`) {
			continue
		}
		if !sc.Scan() {
			t.Fatalf("no response to %s: %v", l, sc.Err())
		}
		got = append(got, sc.Text())
	}
	inW.Close()
	for sc.Scan() {
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return got
}
