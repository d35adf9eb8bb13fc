package oauth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// WellKnownPath is the RFC 9728 well-known path of protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// metadataDoc is the RFC 9728 metadata document.
type metadataDoc struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// RFC 9728 §2 and RFC 9449 §5.1 (omitted when DPoP is off).
	DPoPAlgorithms []string `json:"dpop_signing_alg_values_supported,omitempty"`
	DPoPRequired   bool     `json:"dpop_bound_access_tokens_required,omitempty"`
}

// buildMetadata renders the metadata and derives its URLs from the
// resource: WellKnownPath inserted between the host and the path (RFC 9728
// §3.1), and WellKnownPath itself, which clients try next.
func (rs *ResourceServer) buildMetadata() error {
	u, err := url.Parse(rs.opts.Resource)
	if err != nil {
		return err
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	rs.metadataURL = u.Scheme + "://" + u.Host + WellKnownPath + path
	rs.wellKnown = []string{WellKnownPath}
	if path != "" {
		rs.wellKnown = append(rs.wellKnown, WellKnownPath+path)
	}
	doc := metadataDoc{
		Resource:               rs.opts.Resource,
		AuthorizationServers:   rs.opts.AuthorizationServers,
		ScopesSupported:        rs.opts.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
	}
	if rs.dpop != nil {
		doc.DPoPAlgorithms = rs.opts.DPoP.Algorithms
		doc.DPoPRequired = rs.opts.DPoP.Mode == DPoPRequired
	}
	rs.metadata, err = json.Marshal(doc)
	return err
}

// MetadataURL is the URL of the resource's metadata that challenges carry
// in resource_metadata: the path-inserted well-known URL.
func (rs *ResourceServer) MetadataURL() string { return rs.metadataURL }

// MetadataPaths are the request paths the metadata is served at:
// WellKnownPath and, for a resource with a path, the path-inserted one.
func (rs *ResourceServer) MetadataPaths() []string {
	return append([]string(nil), rs.wellKnown...)
}

// MetadataHandler serves the metadata document at any path: GET and HEAD
// get the JSON (readable cross-origin, since it is public), OPTIONS a CORS
// preflight answer, other methods 405.
func (rs *ResourceServer) MetadataHandler() http.Handler {
	return http.HandlerFunc(rs.serveMetadata)
}

// WithMetadata returns a handler that serves the metadata at
// MetadataPaths and passes every other request to next, typically the MCP
// server; with DPoP.RequireNonce, a response to a request with a DPoP
// header carries a current DPoP-Nonce.
func (rs *ResourceServer) WithMetadata(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range rs.wellKnown {
			if r.URL.Path == p {
				rs.serveMetadata(w, r)
				return
			}
		}
		if rs.dpop != nil && rs.dpop.nonces != nil && r.Header.Get("DPoP") != "" {
			w.Header().Set("DPoP-Nonce", rs.dpop.nonces.issue())
		}
		next.ServeHTTP(w, r)
	})
}

func (rs *ResourceServer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(rs.metadata)
		}
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", mcp.HeaderProtocolVersion)
		w.WriteHeader(http.StatusNoContent)
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
