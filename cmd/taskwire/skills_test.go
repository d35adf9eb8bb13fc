package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/node"
)

// skillsNode starts the demo node with `serve --skills DIR` applied to
// its configuration, DIR holding one skill with a file, and returns the
// client environment.
func skillsNode(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "release-notes", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: release-notes\ndescription: Write release notes from merged changes\n---\n\nUse templates/notes.md.\n"
	for name, body := range map[string]string{"SKILL.md": md, "templates/notes.md": "# Notes\n"} {
		if err := os.WriteFile(filepath.Join(dir, "release-notes", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configure := programFlags("serve", fs)
	if err := fs.Parse([]string{"--skills", dir}); err != nil {
		t.Fatal(err)
	}
	cfg := withDemo(testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	if err := configure(&cfg); err != nil {
		t.Fatal(err)
	}
	// Not start: it would replace the endpoint with a new demo one.
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return map[string]string{urlEnv: n.URL()}
}

func TestSkillsCommands(t *testing.T) {
	env := skillsNode(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"list", []string{"skills", "list"}, 0, "release-notes  skill://release-notes/SKILL.md  2 files, 114 bytes  Write release notes from merged changes\n"},
		{"get", []string{"skills", "get", "skill://release-notes/SKILL.md"}, 0, "---\nname: release-notes\n"},
		{"get a file", []string{"skills", "get", "--file", "templates/notes.md", "skill://release-notes/SKILL.md"}, 0, "# Notes\n"},
		{"unlisted file", []string{"skills", "get", "--file", "templates/other.md", "skill://release-notes/SKILL.md"}, 1, "not listed"},
		{"unknown skill", []string{"skills", "get", "skill://nope/SKILL.md"}, 1, "No skill is served"},
		{"json", []string{"skills", "list", "--json"}, 0, `"digest": "sha256:`},
		{"no subcommand", []string{"skills"}, 2, "a subcommand is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, cliOpts{env: env}, tt.args...)
			if r.Code != tt.wantCode || !strings.Contains(r.Stdout+r.Stderr, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.Code, r.Stdout, r.Stderr, tt.wantCode, tt.want)
			}
		})
	}
}

func TestServeSkillsRefusesBadDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bad"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad", "SKILL.md"), []byte("no front matter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configure := programFlags("serve", fs)
	if err := fs.Parse([]string{"--skills", dir}); err != nil {
		t.Fatal(err)
	}
	cfg := withDemo(testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	if err := configure(&cfg); err == nil || !strings.Contains(err.Error(), "front matter") {
		t.Fatalf("got %v, want the front matter refused", err)
	}
}
