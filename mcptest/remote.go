package mcptest

import (
	"bytes"
	"io"
	"net/http"
)

// Remote returns an http.Handler that forwards each request over real
// HTTP to the server at base (scheme://host:port) with client, and copies
// the response back, so that a Client can talk to a server through its
// socket. A request that cannot be forwarded is answered with HTTP 502.
func Remote(base string, client *http.Client) http.Handler {
	return &remote{base: base, client: client}
}

type remote struct {
	base   string
	client *http.Client
}

func (r *remote) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.base+req.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
