package oauth

import (
	"slices"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// requiredScopes returns the scopes a request needs, sorted and without
// repeats: those of its method and, for tools/call, those of its tool.
func (rs *ResourceServer) requiredScopes(method, tool string) []string {
	need := rs.opts.MethodScopes[method]
	if method == mcp.MethodToolsCall {
		if ts := rs.opts.ToolScopes[tool]; len(ts) > 0 {
			need = slices.Concat(need, ts)
			slices.Sort(need)
			need = slices.Compact(need)
		}
	}
	return need
}

// RequiredScopes returns the scopes a request for method (and, for
// tools/call, tool) needs under the rule of the package documentation.
func (rs *ResourceServer) RequiredScopes(method, tool string) []string {
	return slices.Clone(rs.requiredScopes(method, tool))
}

// hasScopes reports whether granted holds every scope of required.
func hasScopes(granted, required []string) bool {
	for _, s := range required {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// scopesOf returns the scopes a token grants: the space-separated "scope"
// claim and the "scp" claim (an array of strings or a space-separated
// string). Values of other types grant nothing.
func scopesOf(m map[string]any) []string {
	var out []string
	if s, ok := m["scope"].(string); ok {
		out = append(out, strings.Fields(s)...)
	}
	switch scp := m["scp"].(type) {
	case string:
		out = append(out, strings.Fields(scp)...)
	case []any:
		for _, v := range scp {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// allScopes is every scope of the maps, sorted, without repeats.
func allScopes(maps ...map[string][]string) []string {
	var out []string
	for _, m := range maps {
		for _, scopes := range m {
			out = append(out, scopes...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
