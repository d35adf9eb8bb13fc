// Package skills is the model of the MCP Skills extension
// (io.modelcontextprotocol/skills, SEP-2640): skills read from a directory,
// an fs.FS or given in code (LoadDir, LoadFS, New), their entries with
// digests computed once, the wire types of its three methods, and the
// checks a host makes before it uses what it reads (Entry.Check,
// Resource.Verify, Entry.VerifyManifest). Package skills/skillserver
// serves a Set on a server.Endpoint; package client lists, gets and loads
// skills with these checks.
//
// # The extension, as this package implements it
//
// Sources: SEP-2640 (modelcontextprotocol.io/seps/2640-skills-extension),
// the stable extension page specification/stable/skills.mdx of
// github.com/modelcontextprotocol/ext-skills, and the sep-2640-* scenarios
// of the conformance suite @modelcontextprotocol/conformance 0.2.0-alpha.12
// (its server scenarios sep-2640-skills-directory, -enumeration and
// -manifest, its client scenarios sep-2640-client-no-prefetch,
// -verify-digest, -verify-size and -verify-frontmatter).
//
//   - Capability: the server lists the extension under
//     capabilities.extensions with a settings object placed directly under
//     the identifier ({} or {"directoryRead": true}); a server declaring it
//     also declares resources, and must answer skills/list and skills/get.
//     directoryRead: true commits it to resources/directory/read.
//   - A skill is a directory with a SKILL.md at its root, whose YAML front
//     matter has at least name and description (Agent Skills rules: name 1-64
//     of a-z, 0-9 and single inner hyphens; description at most 1024
//     characters). Every file is a resource, skill://<skill-path>/<file>;
//     the last segment of the skill path equals the name. Skills may nest;
//     an enclosing skill lists a nested one's files as its own.
//   - An entry is {uri, frontmatter, resources}: uri of SKILL.md, the front
//     matter as a JSON object with every field the author wrote, and
//     resources, either the complete list of {uri, digest, size} (SKILL.md
//     included, digest "sha256:" + 64 lowercase hex of the raw bytes, size
//     their length) or the string "dynamic". Limits a host must accept and a
//     server should keep to: 512 entries and 16 MiB per skill.
//   - skills/list: paginated by cursor like the base lists, an entry never
//     split across pages, resultType, ttlMs and cacheScope from 2026-07-28.
//     skills/get {uri}: {skill: entry} with ttlMs and cacheScope and no
//     cursor; a URI that names no served skill is -32602.
//   - The SKILL.md resource: mimeType text/markdown, name and description
//     from the front matter; _meta keys, if any, under
//     io.modelcontextprotocol.skills/.
//   - resources/directory/read {uri, cursor?}: the direct children of a
//     directory resource (mimeType inode/directory, URI without trailing
//     slash: a skill's root and each subdirectory), files with their
//     resource metadata and subdirectories as directory resources; a URI
//     that is no directory, or does not exist, is -32602.
//   - A host verifies every file it reads against the held entry (size, then
//     digest; a wrong size fails whatever the digest), compares a SKILL.md's
//     parsed front matter field by field with the entry's, never uses
//     content that fails, treats a read of an unlisted file as a failure, and
//     never retrieves a skill's files before the skill is loaded (not on
//     connection, listing or approval).
//
// What the conformance scenarios check beyond that: the server scenarios
// find a skill through skills/list and resources/list, read its SKILL.md,
// need a subdirectory among the children of the skill's root (-directory)
// and compare the front matter of the file with the entry's (-enumeration);
// the cache attributes are checked only at 2026-07-28. The client scenarios
// serve one skill and record the client's resources/read calls: none may
// come after listing alone (-no-prefetch), and after a SKILL.md that fails
// digest, size or front-matter verification the client must not go on to
// the skill's other file.
package skills
