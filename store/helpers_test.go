package store_test

import (
	"net/url"
	"testing"

	"github.com/taskwire/taskwire/internal/faultnet"
)

// hostPort returns the host:port of a PostgreSQL URL.
func hostPort(t *testing.T, pgURL string) string {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// viaProxy returns pgURL with its host:port replaced by addr.
func viaProxy(t *testing.T, pgURL, addr string) string {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// frozenProxy returns pgURL through a proxy that accepts connections and
// never forwards a byte: a server that accepts but never answers.
func frozenProxy(t *testing.T, pgURL string) string {
	t.Helper()
	p, err := faultnet.Listen(hostPort(t, pgURL))
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	t.Cleanup(func() { p.Close() })
	return viaProxy(t, pgURL, p.Addr())
}
