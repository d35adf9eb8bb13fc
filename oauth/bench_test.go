package oauth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// BenchmarkAdmitBearer measures the admission of a request with a valid
// ES256 bearer token, the path DPoP must not slow down.
func BenchmarkAdmitBearer(b *testing.B) {
	r := newRig(b, nil)
	tok := r.iss.SignWith(b, r.iss.Current("ES256"), "ES256", r.iss.Claims("alice", resource, r.clock.Now()))
	req := &server.AdmissionRequest{Endpoint: "test", Method: mcp.MethodToolsList,
		Header: http.Header{"Authorization": {"Bearer " + tok}}, HTTPMethod: http.MethodPost, Host: "127.0.0.1:1", Path: "/mcp"}
	if _, err := r.rs.Admit(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.rs.Admit(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdmitDPoP measures the admission of a request with a valid
// ES256 DPoP-bound token and a fresh ES256 proof.
func BenchmarkAdmitDPoP(b *testing.B) {
	r := newRig(b, nil)
	alice := newHolder(b)
	c := r.iss.Claims("alice", resource, r.clock.Now())
	c["cnf"] = map[string]any{"jkt": alice.jkt}
	tok := r.iss.SignWith(b, r.iss.Current("ES256"), "ES256", c)
	proofs := make([]string, 0, 4096)
	for range cap(proofs) {
		proofs = append(proofs, alice.proof(b, "POST", resource, tok, r.clock.Now(), nil, nil))
	}
	h := http.Header{"Authorization": {"DPoP " + tok}}
	req := &server.AdmissionRequest{Endpoint: "test", Method: mcp.MethodToolsList,
		Header: h, HTTPMethod: http.MethodPost, Host: "127.0.0.1:1", Path: "/mcp"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h["Dpop"] = proofs[i%len(proofs):][:1]
		i++
		if _, err := r.rs.Admit(context.Background(), req); err != nil && i <= len(proofs) {
			b.Fatal(err)
		}
	}
}
