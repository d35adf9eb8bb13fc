package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/mcp"
)

// The identifiers of the extension.
const (
	// ExtensionID is the key of the extension under the "extensions"
	// capability.
	ExtensionID = "io.modelcontextprotocol/skills"
	// MethodList enumerates the skills a server serves.
	MethodList = "skills/list"
	// MethodGet returns the entry of one skill, named by its SKILL.md URI.
	MethodGet = "skills/get"
	// MethodDirectoryRead lists the direct children of a directory
	// resource; a server offers it when it declares directoryRead.
	MethodDirectoryRead = "resources/directory/read"
	// SettingDirectoryRead is the capability setting that declares
	// MethodDirectoryRead.
	SettingDirectoryRead = "directoryRead"
	// ManifestName is the file every skill has at its root.
	ManifestName = "SKILL.md"
	// Scheme is the URI scheme skills are served under.
	Scheme = "skill"
	// DirectoryMIMEType marks a directory resource.
	DirectoryMIMEType = "inode/directory"
	// ManifestMIMEType is the mimeType of a SKILL.md resource.
	ManifestMIMEType = "text/markdown"
	// DynamicResources is the resources value of a skill whose files have
	// no stable digests.
	DynamicResources = "dynamic"
)

// The per-skill limits every conforming host accepts (SEP-2640, Limits).
const (
	// LimitFiles is the most resource entries a skill should have,
	// SKILL.md included.
	LimitFiles = 512
	// LimitSkillBytes is the most bytes a skill's files should add up to.
	LimitSkillBytes = 16 << 20
)

// Resource is one file of a skill entry: its URI and the SHA-256 digest
// ("sha256:" and 64 lowercase hex digits) and length of its raw bytes.
type Resource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Resources is the resources member of an entry: the complete list of a
// skill's files, or, when Dynamic is set, the string "dynamic" (no
// digests: such a skill cannot be verified).
type Resources struct {
	Files   []Resource
	Dynamic bool
}

// MarshalJSON encodes the list, or "dynamic".
func (r Resources) MarshalJSON() ([]byte, error) {
	if r.Dynamic {
		return json.Marshal(DynamicResources)
	}
	if r.Files == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(r.Files)
}

// UnmarshalJSON accepts an array of resources or the string "dynamic";
// anything else (null included) is an error, since hosts must not load
// such an entry.
func (r *Resources) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil || s != DynamicResources {
			return fmt.Errorf("skills: resources is the string %s, not %q", b, DynamicResources)
		}
		*r = Resources{Dynamic: true}
		return nil
	}
	if len(b) == 0 || b[0] != '[' {
		return errors.New("skills: resources is neither an array nor \"dynamic\"")
	}
	var files []Resource
	if err := json.Unmarshal(b, &files); err != nil {
		return fmt.Errorf("skills: resources: %w", err)
	}
	*r = Resources{Files: files}
	return nil
}

// Entry describes one skill, identically in skills/list and skills/get:
// the URI of its SKILL.md, its front matter as a JSON object (every field
// the author wrote; name and description always present) and its files.
type Entry struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   Resources       `json:"resources"`
}

// ListParams are the params of skills/list.
type ListParams struct {
	Cursor string `json:"cursor,omitempty"`
	mcp.RequestParams
}

// ListResult is the result of skills/list. ResultType, TTLMs and CacheScope
// are members of the 2026-07-28 revision; a 2025-era session receives the
// result without them.
type ListResult struct {
	ResultType mcp.ResultType `json:"resultType,omitempty"`
	Skills     []*Entry       `json:"skills"`
	NextCursor string         `json:"nextCursor,omitempty"`
	TTLMs      int64          `json:"ttlMs"`
	CacheScope mcp.CacheScope `json:"cacheScope,omitempty"`
	mcp.Meta   `json:"_meta,omitzero"`
}

// GetParams are the params of skills/get.
type GetParams struct {
	URI string `json:"uri"`
	mcp.RequestParams
}

// GetResult is the result of skills/get: one entry and no cursor.
type GetResult struct {
	ResultType mcp.ResultType `json:"resultType,omitempty"`
	Skill      *Entry         `json:"skill"`
	TTLMs      int64          `json:"ttlMs"`
	CacheScope mcp.CacheScope `json:"cacheScope,omitempty"`
	mcp.Meta   `json:"_meta,omitzero"`
}

// DirectoryReadParams are the params of resources/directory/read.
type DirectoryReadParams struct {
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
	mcp.RequestParams
}

// DirectoryReadResult is the result of resources/directory/read: the
// directory's direct children, files with their resource metadata and
// subdirectories with mimeType inode/directory.
type DirectoryReadResult struct {
	ResultType mcp.ResultType  `json:"resultType,omitempty"`
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
	mcp.Meta   `json:"_meta,omitzero"`
}
