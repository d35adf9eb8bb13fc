package oauthclient_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/oauth"
)

// dpopKey returns a P-256 key and its RFC 7638 thumbprint.
func dpopKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := `{"crv":"P-256","kty":"EC","x":"` + b64(k.X.FillBytes(make([]byte, 32))) + `","y":"` + b64(k.Y.FillBytes(make([]byte, 32))) + `"}`
	sum := sha256.Sum256([]byte(jwk))
	return k, b64(sum[:])
}

// TestDPoPAgainstTheResourceServer: a stored DPoP-bound token, bound to a
// configured key, is sent with proofs that package oauth accepts, where
// DPoP is required with nonces: the first request is answered with
// use_dpop_nonce and sent once more with the nonce, the later ones carry
// it at once. A token bound to another key is not sent at all.
func TestDPoPAgainstTheResourceServer(t *testing.T) {
	r := newRigWith(t, "", func(o *oauth.Options) {
		o.DPoP = oauth.DPoP{Mode: oauth.DPoPRequired, RequireNonce: true}
	})
	key, jkt := dpopKey(t)
	c := r.iss.Claims("alice", r.url, time.Now())
	c["cnf"] = map[string]any{"jkt": jkt}
	store, err := oauthclient.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &oauthclient.Record{ServerURL: r.url, Issuer: r.iss.URL, AccessToken: r.iss.Token(t, c),
		TokenType: oauthclient.TokenTypeDPoP, DPoPThumbprint: jkt, Expiry: time.Now().Add(time.Hour)}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	az, err := oauthclient.New(r.url, oauthclient.Options{Store: store, DPoPKey: key})
	if err != nil {
		t.Fatal(err)
	}
	mc := r.mcpClient(t, az)
	for range 3 {
		if _, err := mc.Call(t.Context(), "echo", map[string]any{}); err != nil {
			t.Fatalf("tools/call with a DPoP-bound token: %v", err)
		}
	}
	// Only the first request lacked the nonce.
	var refused []int
	for i, st := range r.statuses() {
		if st != http.StatusOK {
			refused = append(refused, i)
		}
	}
	if diff := cmp.Diff([]int{0}, refused); diff != "" {
		t.Errorf("refused requests (-want +got):\n%s\nrequests %v, statuses %v", diff, r.seen(), r.statuses())
	}

	other, _ := dpopKey(t)
	az2, err := oauthclient.New(r.url, oauthclient.Options{Store: store, DPoPKey: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := az2.RoundTrip(mustPost(t, r.url)); err == nil || !strings.Contains(err.Error(), "another DPoP key") {
		t.Errorf("a token bound to another key: %v, want an error naming the key", err)
	}
}

func mustPost(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
