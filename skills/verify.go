package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The verification failures of a host (SEP-2640, Integrity and
// Verification). Content that fails is not to be used.
var (
	// ErrSizeMismatch: the bytes read are not as many as the entry says.
	ErrSizeMismatch = errors.New("skills: size mismatch")
	// ErrDigestMismatch: the bytes read do not hash to the entry's digest.
	ErrDigestMismatch = errors.New("skills: digest mismatch")
	// ErrFrontmatterMismatch: the SKILL.md read has front matter other than
	// the entry's.
	ErrFrontmatterMismatch = errors.New("skills: front matter mismatch")
	// ErrUnlisted: a file the held entry does not list.
	ErrUnlisted = errors.New("skills: file not listed in the skill's entry")
	// ErrInvalidEntry: an entry a host must not load.
	ErrInvalidEntry = errors.New("skills: invalid skill entry")
)

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Digest returns the digest of b as entries carry it: "sha256:" and 64
// lowercase hex digits.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Name returns the front-matter name of the entry, empty when it has
// none.
func (e *Entry) Name() string { return e.field("name") }

// Description returns the front-matter description of the entry.
func (e *Entry) Description() string { return e.field("description") }

func (e *Entry) field(k string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(e.Frontmatter, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[k], &s) != nil {
		return ""
	}
	return s
}

// Root returns the URI of the skill's root directory: the entry's URI
// without "/SKILL.md".
func (e *Entry) Root() string { return strings.TrimSuffix(e.URI, "/"+ManifestName) }

// Lookup returns the resource of the entry at uri.
func (e *Entry) Lookup(uri string) (Resource, bool) {
	for _, r := range e.Resources.Files {
		if r.URI == uri {
			return r, true
		}
	}
	return Resource{}, false
}

// Check reports whether a host may load the entry: its URI ends in
// /SKILL.md after a last segment equal to the front-matter name, the
// front matter is an object with a name and description, and, unless the
// resources are dynamic, they list SKILL.md, each file once, within the
// skill's directory, with well-formed digests and sizes, within
// LimitFiles and LimitSkillBytes. Every problem is reported, wrapped in
// ErrInvalidEntry.
func (e *Entry) Check() error {
	var errs []error
	root, ok := strings.CutSuffix(e.URI, "/"+ManifestName)
	last := root[strings.LastIndexByte(root, '/')+1:]
	switch {
	case !ok || !strings.Contains(root, "://") || strings.HasSuffix(root, "://"):
		errs = append(errs, fmt.Errorf("uri %q is not the URI of a SKILL.md", e.URI))
	case e.Name() == "" || e.Description() == "":
		errs = append(errs, errors.New("front matter lacks a name or a description"))
	case last != e.Name():
		errs = append(errs, fmt.Errorf("uri %q does not end in the skill's name %q", e.URI, e.Name()))
	}
	if !e.Resources.Dynamic {
		errs = append(errs, e.checkFiles(root)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w %s: %w", ErrInvalidEntry, e.URI, errors.Join(errs...))
	}
	return nil
}

func (e *Entry) checkFiles(root string) []error {
	var errs []error
	seen := map[string]bool{}
	var total int64
	for _, r := range e.Resources.Files {
		switch {
		case seen[r.URI]:
			errs = append(errs, fmt.Errorf("%s is listed twice", r.URI))
		case r.URI != e.URI && !strings.HasPrefix(r.URI, root+"/"):
			errs = append(errs, fmt.Errorf("%s is outside the skill's directory", r.URI))
		case !digestPattern.MatchString(r.Digest):
			errs = append(errs, fmt.Errorf("%s has a malformed digest", r.URI))
		case r.Size < 0:
			errs = append(errs, fmt.Errorf("%s has a negative size", r.URI))
		}
		seen[r.URI] = true
		total += r.Size
	}
	if !seen[e.URI] {
		errs = append(errs, errors.New("resources do not list SKILL.md"))
	}
	if n := len(e.Resources.Files); n > LimitFiles {
		errs = append(errs, fmt.Errorf("%d files, more than the %d every host accepts", n, LimitFiles))
	}
	if total > LimitSkillBytes {
		errs = append(errs, fmt.Errorf("%d bytes, more than the %d every host accepts", total, LimitSkillBytes))
	}
	return errs
}

// Verify checks content read for r: its length first (a wrong size fails
// whatever the digest), then its digest.
func (r Resource) Verify(content []byte) error {
	if int64(len(content)) != r.Size {
		return fmt.Errorf("%w: %s has %d bytes, the entry says %d", ErrSizeMismatch, r.URI, len(content), r.Size)
	}
	if Digest(content) != r.Digest {
		return fmt.Errorf("%w: %s", ErrDigestMismatch, r.URI)
	}
	return nil
}

// VerifyManifest checks a SKILL.md read for the entry: its front matter,
// parsed, must equal the entry's field by field.
func (e *Entry) VerifyManifest(md []byte) error {
	fm, err := ParseFrontmatter(md)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFrontmatterMismatch, e.URI, err)
	}
	if !SameFrontmatter(fm.JSON, e.Frontmatter) {
		return fmt.Errorf("%w: %s differs from its entry", ErrFrontmatterMismatch, e.URI)
	}
	return nil
}
