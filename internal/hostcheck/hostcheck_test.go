package hostcheck

import "testing"

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"LocalHost:8080": "localhost",
		"[::1]:9090":     "::1",
		"[::1]":          "::1",
		"10.0.0.5":       "10.0.0.5",
		"Example.COM":    "example.com",
		"":               "",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
	for h, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true, "127.0.0.2": false, "localhost.example": false} {
		if got := IsLoopbackName(h); got != want {
			t.Errorf("IsLoopbackName(%q) = %v", h, got)
		}
	}
}
