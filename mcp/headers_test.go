package mcp

import "testing"

func TestIsHeaderToken(t *testing.T) {
	for s, want := range map[string]bool{
		"Region": true, "x-Tenant_ID.2": true, "a!#$%&'*+-.^_`|~z": true,
		"": false, "My Region": false, "Region:Primary": false, "Région": false, "Region\t1": false, "a/b": false,
	} {
		if got := IsHeaderToken(s); got != want {
			t.Errorf("IsHeaderToken(%q) = %v, want %v", s, got, want)
		}
	}
}
