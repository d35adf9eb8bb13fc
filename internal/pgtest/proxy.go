package pgtest

import (
	"net/url"
	"testing"

	"github.com/taskwire/taskwire/internal/faultnet"
)

// Proxied returns pgURL with its host replaced by a loopback faultnet
// proxy to that host, which the test can freeze or drop, and the proxy,
// closed when t ends.
func Proxied(t testing.TB, pgURL string) (string, *faultnet.Proxy) {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultnet.Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	return u.String(), p
}
