package skills_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/skills"
)

const pdfSkill = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2.1\"\n  level: 3\n---\n\n# PDF processing\n"

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestLoadFSEntries(t *testing.T) {
	fsys := fstest.MapFS{
		"pdf-processing/SKILL.md":            file(pdfSkill),
		"pdf-processing/references/FORMS.md": file("forms\n"),
		"pdf-processing/.git/config":         file("hidden"),
		"README.md":                          file("not in a skill"),
	}
	set, err := skills.LoadFS(fsys, skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Skills()) != 1 {
		t.Fatalf("got %d skills, want 1", len(set.Skills()))
	}
	sk := set.Skills()[0]
	got, _ := json.Marshal(sk.Entry)
	want := `{"uri":"skill://pdf-processing/SKILL.md","frontmatter":{"description":"Extract, fill, and assemble PDF documents","metadata":{"level":3,"version":"2.1"},"name":"pdf-processing"},` +
		`"resources":[{"uri":"skill://pdf-processing/SKILL.md","digest":"` + skills.Digest([]byte(pdfSkill)) + `","size":` + itoa(len(pdfSkill)) + `},` +
		`{"uri":"skill://pdf-processing/references/FORMS.md","digest":"` + skills.Digest([]byte("forms\n")) + `","size":6}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	if err := sk.Entry.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	if _, ok := set.File("skill://README.md"); ok {
		t.Error("a file outside every skill is served")
	}
	kids, ok := set.Directory("skill://pdf-processing")
	if !ok {
		t.Fatal("the skill's root is no directory")
	}
	var names []string
	for _, k := range kids {
		names = append(names, k.URI+" "+k.MIMEType)
	}
	wantKids := []string{"skill://pdf-processing/SKILL.md text/markdown", "skill://pdf-processing/references inode/directory"}
	if diff := cmp.Diff(wantKids, names); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if _, ok := set.Directory("skill://pdf-processing/SKILL.md"); ok {
		t.Error("a file is a directory")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestLoadFSRefuses(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		opts skills.Options
		want []string
	}{
		{"no front matter", fstest.MapFS{"a/SKILL.md": file("# a\n")}, skills.Options{}, []string{"does not begin with a --- front matter line"}},
		{"name not the directory's", fstest.MapFS{"a/SKILL.md": file("---\nname: b\ndescription: d\n---\n")}, skills.Options{}, []string{`name "b" is not the directory's name "a"`}},
		{"bad name and no description", fstest.MapFS{"A/SKILL.md": file("---\nname: A\n---\n")}, skills.Options{},
			[]string{"breaks the naming rules", "has no description"}},
		{"file over the bound", fstest.MapFS{"a/SKILL.md": file("---\nname: a\ndescription: d\n---\n"), "a/big.bin": file(strings.Repeat("x", 101))},
			skills.Options{MaxFileBytes: 100}, []string{"a/big.bin has 101 bytes, more than MaxFileBytes (100)"}},
		{"too many files", fstest.MapFS{"a/SKILL.md": file("---\nname: a\ndescription: d\n---\n"), "a/x": file("x"), "a/y": file("y")},
			skills.Options{MaxFilesPerSkill: 2}, []string{"skill a has 3 files, more than MaxFilesPerSkill (2)"}},
		{"root is a skill", fstest.MapFS{"SKILL.md": file("---\nname: a\ndescription: d\n---\n")}, skills.Options{}, []string{"the root itself holds a SKILL.md"}},
		{"unsafe file name", fstest.MapFS{"a/SKILL.md": file("---\nname: a\ndescription: d\n---\n"), "a/two words.md": file("x")},
			skills.Options{}, []string{"not URI-safe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := skills.LoadFS(tt.fsys, tt.opts)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// writeSkill writes a skill directory name under dir.
func writeSkill(t *testing.T, dir, name string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(d, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: d\n---\n"
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLoadDirSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		target  func(skill string) string
		wantErr string
	}{
		{"absolute, out", func(string) string { return outside }, "symbolic link out of the skills directory"},
		{"relative, out", func(skill string) string {
			rel, _ := filepath.Rel(filepath.Join(skill, "references"), outside)
			return rel
		}, "symbolic link out of the skills directory"},
		{"inside", func(string) string { return "../SKILL.md" }, ""},
		{"to a directory", func(string) string { return "." }, "symbolic link to a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			skill := writeSkill(t, root, "linked")
			if err := os.Symlink(tt.target(skill), filepath.Join(skill, "references", "link.md")); err != nil {
				t.Fatal(err)
			}
			for _, load := range []func() (*skills.Set, error){
				func() (*skills.Set, error) { return skills.LoadDir(root, skills.Options{}) },
				func() (*skills.Set, error) { return skills.LoadFS(os.DirFS(root), skills.Options{}) },
			} {
				set, err := load()
				if tt.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					f, ok := set.File("skill://linked/references/link.md")
					if !ok || !strings.HasPrefix(string(f.Content), "---\nname: linked") {
						t.Fatalf("link not served with its target's bytes: %v", f)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
			}
		})
	}
}

func TestLoadDirOfOneSkill(t *testing.T) {
	d := writeSkill(t, t.TempDir(), "solo")
	set, err := skills.LoadDir(d, skills.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Skill("skill://solo/SKILL.md"); !ok {
		t.Fatal("the directory's own skill is not served")
	}
}

func TestNestedAndProgrammatic(t *testing.T) {
	set, err := skills.New(skills.Options{},
		skills.Source{Path: "acme/billing", Files: map[string][]byte{
			"SKILL.md":                 []byte("---\nname: billing\ndescription: Billing\n---\n"),
			"refunds/SKILL.md":         []byte("---\nname: refunds\ndescription: Refunds\n---\n"),
			"refunds/examples/mail.md": []byte("mail"),
		}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sk := range set.Skills() {
		got = append(got, sk.URI()+" "+itoa(len(sk.Entry.Resources.Files)))
	}
	want := []string{"skill://acme/billing/SKILL.md 3", "skill://acme/billing/refunds/SKILL.md 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	if kids, ok := set.Directory("skill://acme"); !ok || len(kids) != 1 || kids[0].MIMEType != skills.DirectoryMIMEType {
		t.Errorf("prefix directory: %v %v", kids, ok)
	}
}

func TestVerify(t *testing.T) {
	set, err := skills.New(skills.Options{}, skills.Source{Path: "a", Files: map[string][]byte{"SKILL.md": []byte("---\nname: a\ndescription: d\n---\nbody\n")}})
	if err != nil {
		t.Fatal(err)
	}
	e := set.Skills()[0].Entry
	r := e.Resources.Files[0]
	md := []byte("---\nname: a\ndescription: d\n---\nbody\n")
	tests := []struct {
		name    string
		err     error
		wantErr error
	}{
		{"intact", r.Verify(md), nil},
		{"digest", r.Verify([]byte("---\nname: a\ndescription: d\n---\nBODY\n")), skills.ErrDigestMismatch},
		{"size", r.Verify(append(md, 'x')), skills.ErrSizeMismatch},
		{"front matter", e.VerifyManifest([]byte("---\nname: a\ndescription: other\n---\n")), skills.ErrFrontmatterMismatch},
		{"front matter same", e.VerifyManifest([]byte("---\r\ndescription: d\r\nname: a\r\n---\r\n")), nil},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.wantErr) || (tt.wantErr == nil && tt.err != nil) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.err, tt.wantErr)
		}
	}
	bad := *e
	bad.Resources = skills.Resources{Files: []skills.Resource{{URI: "skill://b/x", Digest: "sha256:00", Size: -1}}}
	if err := bad.Check(); !errors.Is(err, skills.ErrInvalidEntry) || !strings.Contains(err.Error(), "outside the skill's directory") || !strings.Contains(err.Error(), "do not list SKILL.md") {
		t.Errorf("Check of a bad entry: %v", err)
	}
}
