package skills

import (
	"mime"
	"path"
	"slices"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// addToDirs records file p, and each directory above it, as a child of
// its parent directory.
func (s *Set) addToDirs(p string) {
	child := p
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		kids := s.dirs[dir]
		i, found := slices.BinarySearch(kids, child)
		if !found {
			s.dirs[dir] = slices.Insert(kids, i, child)
		}
		if found && child != p {
			return // dir and everything above it are recorded already
		}
		child = dir + "/"
	}
}

// mimeTypeOf is the media type of a file by its extension: text/markdown
// for .md, the system's table otherwise, application/octet-stream when
// unknown.
func mimeTypeOf(p string) string {
	ext := strings.ToLower(path.Ext(p))
	switch ext {
	case ".md", ".markdown":
		return ManifestMIMEType
	case "":
		return "application/octet-stream"
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Skills returns the skills sorted by path. The slice is the Set's own:
// do not modify it.
func (s *Set) Skills() []*Skill { return s.skills }

// Skill returns the skill whose SKILL.md is at uri.
func (s *Set) Skill(uri string) (*Skill, bool) {
	sk, ok := s.byURI[uri]
	return sk, ok
}

// File returns the served file at uri.
func (s *Set) File(uri string) (*File, bool) {
	p, ok := PathOf(uri)
	if !ok {
		return nil, false
	}
	f, ok := s.files[p]
	return f, ok
}

// Files returns every served file sorted by path.
func (s *Set) Files() []*File {
	out := make([]*File, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Resource returns the resource metadata of a served file: for a
// SKILL.md, the skill's name and description and text/markdown.
func (s *Set) Resource(f *File) *mcp.Resource {
	size := int64(len(f.Content))
	r := &mcp.Resource{URI: f.URI, Name: path.Base(f.Path), MIMEType: f.MIMEType, Size: &size}
	if sk, ok := s.byURI[f.URI]; ok {
		r.Name, r.Description = sk.Name, sk.Description
	}
	return r
}

// Directory returns the direct children of the directory resource at
// uri (a skill's root, such as skill://pdf-processing, one of its
// subdirectories, or a directory of a skill path's prefix), sorted by
// name: files with their resource metadata, subdirectories with
// DirectoryMIMEType. ok is false when uri is no directory of the Set.
func (s *Set) Directory(uri string) (children []*mcp.Resource, ok bool) {
	p, ok := PathOf(uri)
	if !ok {
		return nil, false
	}
	kids, ok := s.dirs[p]
	if !ok {
		return nil, false
	}
	out := make([]*mcp.Resource, 0, len(kids))
	for _, k := range kids {
		if d, isDir := strings.CutSuffix(k, "/"); isDir {
			out = append(out, &mcp.Resource{URI: URIOf(d), Name: path.Base(d), MIMEType: DirectoryMIMEType})
			continue
		}
		out = append(out, s.Resource(s.files[k]))
	}
	return out, true
}
