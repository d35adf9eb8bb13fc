package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Options bound what a Set holds. Zero members take the defaults named.
type Options struct {
	// MaxFileBytes bounds one file. Zero means 1 MiB: a file is returned
	// whole by resources/read, whose result the server bounds (4 MiB by
	// default, and text grows when JSON-escaped).
	MaxFileBytes int64
	// MaxFilesPerSkill bounds the files of one skill, SKILL.md included.
	// Zero means LimitFiles (512), the most every host accepts.
	MaxFilesPerSkill int
	// MaxSkillBytes bounds the sum of one skill's files. Zero means
	// LimitSkillBytes (16 MiB).
	MaxSkillBytes int64
	// MaxSkills bounds the skills of the set. Zero means 1000.
	MaxSkills int
	// MaxTotalBytes bounds the bytes the set holds in memory. Zero means
	// 64 MiB.
	MaxTotalBytes int64
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = 1 << 20
	}
	if o.MaxFilesPerSkill == 0 {
		o.MaxFilesPerSkill = LimitFiles
	}
	if o.MaxSkillBytes == 0 {
		o.MaxSkillBytes = LimitSkillBytes
	}
	if o.MaxSkills == 0 {
		o.MaxSkills = 1000
	}
	if o.MaxTotalBytes == 0 {
		o.MaxTotalBytes = 64 << 20
	}
	return o
}

func (o Options) check() error {
	if o.MaxFileBytes < 0 || o.MaxFilesPerSkill < 0 || o.MaxSkillBytes < 0 || o.MaxSkills < 0 || o.MaxTotalBytes < 0 {
		return errors.New("skills: Options members must not be negative")
	}
	return nil
}

// Source is one skill given in code: its skill path (one or more
// "/"-separated segments, the last equal to the front-matter name, such as
// "pdf-processing" or "acme/billing/refunds") and its files by path
// relative to the skill's root, "SKILL.md" among them.
type Source struct {
	Path  string
	Files map[string][]byte
}

// File is one served file: its path in the skill namespace (the URI
// without "skill://"), URI, media type, bytes and digest.
type File struct {
	Path     string
	URI      string
	MIMEType string
	Content  []byte
	Digest   string
}

// Skill is one skill of a Set.
type Skill struct {
	// Path is the skill path; its last segment is Name.
	Path        string
	Name        string
	Description string
	// Files are the skill's files sorted by path, SKILL.md included, and
	// the files of any skill nested in it.
	Files []*File
	// Entry is the skill's entry as skills/list and skills/get send it,
	// computed once.
	Entry *Entry
}

// URI returns the URI of the skill's SKILL.md.
func (s *Skill) URI() string { return URIOf(s.Path + "/" + ManifestName) }

// Set is an immutable collection of skills with their files and
// directories, safe for concurrent use. Build it with New, LoadFS or
// LoadDir.
type Set struct {
	skills []*Skill
	byURI  map[string]*Skill
	files  map[string]*File
	// dirs maps a directory's path ("" is never served) to its direct
	// children, sorted by name: files by path, subdirectories by path
	// with a trailing "/".
	dirs map[string][]string
}

// URIOf returns the skill:// URI of a path in the skill namespace.
func URIOf(p string) string { return Scheme + "://" + p }

// PathOf returns the namespace path of a skill:// URI and whether uri is
// one.
func PathOf(uri string) (string, bool) {
	return strings.CutPrefix(uri, Scheme+"://")
}

// segmentPattern is what a path segment may be: URI-safe characters
// (RFC 3986 unreserved and most sub-delims), so that a path is its own URI
// without escaping.
var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9._~!$&'()*+,;=@-]+$`)

// checkPath reports whether p is a clean relative path of safe segments.
func checkPath(p string) error {
	if p == "" || path.Clean(p) != p || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not a clean relative path", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || !segmentPattern.MatchString(seg) {
			return fmt.Errorf("%q has a segment that is not URI-safe (letters, digits and ._~!$&'()*+,;=@-)", p)
		}
	}
	return nil
}

// New builds a Set from skills given in code. Every problem (bad paths,
// front matter, a name that is not the last path segment, sizes over the
// bounds) is reported at once.
func New(opts Options, srcs ...Source) (*Set, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	files := map[string][]byte{}
	var errs []error
	for _, src := range srcs {
		if err := checkPath(src.Path); err != nil {
			errs = append(errs, fmt.Errorf("skill path: %w", err))
			continue
		}
		if _, ok := src.Files[ManifestName]; !ok {
			errs = append(errs, fmt.Errorf("skill %s: no %s", src.Path, ManifestName))
		}
		for name, b := range src.Files {
			p := src.Path + "/" + name
			if err := checkPath(name); err != nil {
				errs = append(errs, fmt.Errorf("skill %s: %w", src.Path, err))
				continue
			}
			if _, dup := files[p]; dup {
				errs = append(errs, fmt.Errorf("file %s is given twice", p))
				continue
			}
			files[p] = b
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return build(opts, files)
}

// build makes the Set of a namespace given as file path → bytes: every
// directory holding a SKILL.md is a skill.
func build(opts Options, files map[string][]byte) (*Set, error) {
	s := &Set{byURI: map[string]*Skill{}, files: map[string]*File{}, dirs: map[string][]string{}}
	var errs []error
	var total int64
	paths := make([]string, 0, len(files))
	for p, b := range files {
		paths = append(paths, p)
		total += int64(len(b))
		if int64(len(b)) > opts.MaxFileBytes {
			errs = append(errs, fmt.Errorf("file %s has %d bytes, more than MaxFileBytes (%d)", p, len(b), opts.MaxFileBytes))
		}
	}
	if total > opts.MaxTotalBytes {
		errs = append(errs, fmt.Errorf("the skills add up to %d bytes, more than MaxTotalBytes (%d)", total, opts.MaxTotalBytes))
	}
	slices.Sort(paths)
	paths = slices.DeleteFunc(paths, func(p string) bool { return !withinSkill(p, files) })
	for _, p := range paths {
		sum := sha256.Sum256(files[p])
		s.files[p] = &File{Path: p, URI: URIOf(p), MIMEType: mimeTypeOf(p), Content: files[p], Digest: "sha256:" + hex.EncodeToString(sum[:])}
		s.addToDirs(p)
	}
	for _, p := range paths {
		if path.Base(p) != ManifestName || path.Dir(p) == "." {
			continue
		}
		sk, err := s.skillAt(opts, path.Dir(p), paths)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.skills = append(s.skills, sk)
		s.byURI[sk.URI()] = sk
	}
	if len(s.skills) > opts.MaxSkills {
		errs = append(errs, fmt.Errorf("%d skills, more than MaxSkills (%d)", len(s.skills), opts.MaxSkills))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	return s, nil
}

// skillAt builds the skill rooted at dir from the Set's files; sorted
// lists every file path in order.
func (s *Set) skillAt(opts Options, dir string, sorted []string) (*Skill, error) {
	md := s.files[dir+"/"+ManifestName]
	fm, err := ParseFrontmatter(md.Content)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", dir, err)
	}
	if fm.Name != path.Base(dir) {
		return nil, fmt.Errorf("skill %s: front matter name %q is not the directory's name %q", dir, fm.Name, path.Base(dir))
	}
	sk := &Skill{Path: dir, Name: fm.Name, Description: fm.Description}
	entry := &Entry{URI: sk.URI(), Frontmatter: fm.JSON}
	var bytes int64
	for _, p := range sorted {
		if !strings.HasPrefix(p, dir+"/") {
			continue
		}
		f := s.files[p]
		sk.Files = append(sk.Files, f)
		entry.Resources.Files = append(entry.Resources.Files, Resource{URI: f.URI, Digest: f.Digest, Size: int64(len(f.Content))})
		bytes += int64(len(f.Content))
	}
	var errs []error
	if len(sk.Files) > opts.MaxFilesPerSkill {
		errs = append(errs, fmt.Errorf("skill %s has %d files, more than MaxFilesPerSkill (%d)", dir, len(sk.Files), opts.MaxFilesPerSkill))
	}
	if bytes > opts.MaxSkillBytes {
		errs = append(errs, fmt.Errorf("skill %s has %d bytes, more than MaxSkillBytes (%d)", dir, bytes, opts.MaxSkillBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sk.Entry = entry
	return sk, nil
}

// withinSkill reports whether p lies in a directory that holds a SKILL.md
// (files elsewhere in the namespace belong to no skill and are not served).
func withinSkill(p string, files map[string][]byte) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if _, ok := files[d+"/"+ManifestName]; ok {
			return true
		}
	}
	return false
}
