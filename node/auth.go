package node

import (
	"fmt"
	"io"
	"net/http"

	"github.com/taskwire/taskwire/server"
)

// admission is the node's admission controller: the resource server, or
// the development identities without one.
func (c *Config) admission() server.AdmissionController {
	if c.Auth != nil {
		return c.Auth
	}
	// A caller names itself with development identities: its address
	// bounds its sessions and listens, whatever names it rotates.
	return server.SourceByAddress(server.DevAdmission())
}

// handler is the node's HTTP handler: the MCP server and, with a resource
// server, its metadata.
func (c *Config) handler(srv *server.Server) http.Handler {
	if c.Auth != nil {
		return c.Auth.WithMetadata(srv)
	}
	return srv
}

// printAuth says how callers are admitted.
func printAuth(w io.Writer, c Config) {
	switch {
	case c.Auth != nil:
		fmt.Fprintf(w, "%s: callers need access tokens for this resource; metadata at %s\n", c.Name, c.Auth.MetadataURL())
	case c.InsecureDevAuth && !isLoopbackAddr(c.listenAddr()):
		fmt.Fprintln(w, c.Name+": WARNING: development identities on a non-loopback address (--insecure-dev-auth): "+
			"any Bearer NAME is taken as caller NAME, unchecked")
	default:
		fmt.Fprintln(w, c.Name+": development identities (any Bearer NAME is caller NAME, unchecked), so loopback only; "+
			"give --auth-issuer and --auth-audience to require access tokens")
	}
}
