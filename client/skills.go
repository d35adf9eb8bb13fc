package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/skills"
)

// ErrNoSkills: the server does not declare the Skills extension
// (io.modelcontextprotocol/skills), or not the directoryRead setting a
// directory read needs; the client does not send the request.
var ErrNoSkills = errors.New("client: the server does not declare the skills extension")

// ErrDynamicSkill: LoadSkill refuses a skill whose resources are
// "dynamic", whose content has no digests to verify.
var ErrDynamicSkill = errors.New("client: the skill's resources are dynamic and cannot be verified")

// skillsDeclared returns the server's settings of the Skills extension.
func (c *Client) skillsDeclared(ctx context.Context) (mcp.Object, error) {
	if _, _, err := c.ensure(ctx); err != nil {
		return nil, err
	}
	caps := c.ServerCapabilities()
	if caps == nil {
		return nil, ErrNoSkills
	}
	s, ok := caps.Extensions[skills.ExtensionID]
	if !ok {
		return nil, ErrNoSkills
	}
	return s, nil
}

// ListSkills returns the entries of every skill the server lists,
// following pagination (at most Options.MaxPages pages). It reads no
// skill file. An empty list does not mean the server has no skills: one
// may still be loaded by URI (GetSkill). It returns ErrNoSkills when the
// server does not declare the extension.
func (c *Client) ListSkills(ctx context.Context) ([]*skills.Entry, error) {
	if _, err := c.skillsDeclared(ctx); err != nil {
		return nil, err
	}
	return paginate(ctx, c, skills.MethodList, func(ctx context.Context, cursor string) ([]*skills.Entry, string, error) {
		var res skills.ListResult
		err := c.requestInto(ctx, skills.MethodList, &skills.ListParams{Cursor: cursor}, nil, &res)
		return res.Skills, res.NextCursor, err
	})
}

// GetSkill returns the current entry of the skill whose SKILL.md is at
// uri (a *RPCError with -32602 when the server serves no such skill). It
// reads no skill file.
func (c *Client) GetSkill(ctx context.Context, uri string) (*skills.Entry, error) {
	if _, err := c.skillsDeclared(ctx); err != nil {
		return nil, err
	}
	var res skills.GetResult
	if err := c.requestInto(ctx, skills.MethodGet, &skills.GetParams{URI: uri}, nil, &res); err != nil {
		return nil, err
	}
	if res.Skill == nil {
		return nil, protoErr(skills.MethodGet, "result without a skill", nil)
	}
	return res.Skill, nil
}

// ReadSkillDirectory returns the direct children of the directory
// resource at uri (resources/directory/read), following pagination. It
// returns ErrNoSkills unless the server declares directoryRead. A
// directory read does not extend a loaded skill's entry: LoadedSkill.Read
// reads only the files the entry lists.
func (c *Client) ReadSkillDirectory(ctx context.Context, uri string) ([]*mcp.Resource, error) {
	s, err := c.skillsDeclared(ctx)
	if err != nil {
		return nil, err
	}
	if string(s[skills.SettingDirectoryRead]) != "true" {
		return nil, fmt.Errorf("%w (directoryRead)", ErrNoSkills)
	}
	return paginate(ctx, c, skills.MethodDirectoryRead, func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		var res skills.DirectoryReadResult
		err := c.requestInto(ctx, skills.MethodDirectoryRead, &skills.DirectoryReadParams{URI: uri, Cursor: cursor}, nil, &res)
		return res.Resources, res.NextCursor, err
	})
}

// LoadedSkill is a skill loaded under the entry it was loaded from (the
// held entry): its SKILL.md verified, and its other files read, one at a
// time and verified, only when asked for.
type LoadedSkill struct {
	// Entry is the held entry. Reads resolve only to the files it lists.
	Entry *skills.Entry
	// Manifest is the verified SKILL.md.
	Manifest []byte

	c *Client
}

// LoadSkill loads the skill of entry (from ListSkills or GetSkill): it
// checks the entry (skills.Entry.Check: a well-formed, complete manifest
// within the per-skill limits), reads SKILL.md and verifies its size,
// digest and front matter against the entry. Content that fails is never
// returned: the error wraps skills.ErrSizeMismatch, ErrDigestMismatch or
// ErrFrontmatterMismatch (refresh the entry with GetSkill to recover from
// a skill that changed). A skill with dynamic resources is refused with
// ErrDynamicSkill. No other file of the skill is read.
func (c *Client) LoadSkill(ctx context.Context, entry *skills.Entry) (*LoadedSkill, error) {
	if entry == nil {
		return nil, errors.New("client: LoadSkill needs an entry")
	}
	if err := entry.Check(); err != nil {
		return nil, err
	}
	if entry.Resources.Dynamic {
		return nil, ErrDynamicSkill
	}
	s := &LoadedSkill{Entry: entry, c: c}
	md, err := s.Read(ctx, entry.URI)
	if err != nil {
		return nil, err
	}
	if err := entry.VerifyManifest(md); err != nil {
		return nil, err
	}
	s.Manifest = md
	return s, nil
}

// Read reads one file of the loaded skill, given by its URI or by its path
// relative to the skill's root (such as "references/FORMS.md"), and
// returns it only when its size and digest match the held entry. A file
// the entry does not list is refused with skills.ErrUnlisted without a
// request.
func (s *LoadedSkill) Read(ctx context.Context, ref string) ([]byte, error) {
	uri := ref
	if !strings.Contains(ref, "://") {
		uri = s.Entry.Root() + "/" + strings.TrimPrefix(ref, "./")
	}
	r, ok := s.Entry.Lookup(uri)
	if !ok {
		return nil, fmt.Errorf("%w: %s", skills.ErrUnlisted, uri)
	}
	res, err := s.c.ReadResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	b, err := contentOf(res, uri)
	if err != nil {
		return nil, err
	}
	if err := r.Verify(b); err != nil {
		return nil, err
	}
	return b, nil
}

// contentOf returns the raw bytes of the contents of uri in a read
// result.
func contentOf(res *mcp.ReadResourceResult, uri string) ([]byte, error) {
	for _, c := range res.Contents {
		if c == nil || c.URI != uri {
			continue
		}
		if c.Blob != nil {
			return c.Blob, nil
		}
		return []byte(c.Text), nil
	}
	return nil, protoErr(mcp.MethodResourcesRead, "result has no contents for the uri read", nil)
}
