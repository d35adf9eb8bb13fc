package listcursor

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/task"
)

func TestRoundTripAndBinding(t *testing.T) {
	c, err := New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := New([]byte("fedcba9876543210fedcba9876543210"))
	owner := task.RequestContext{Endpoint: "mcp", Tenant: "t1", Principal: "alice"}
	pos := Position{At: 1_800_000_000_123, ID: "018f-abc"}
	cur, err := c.Encode(owner, pos)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode(owner, cur)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(pos, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	flipped := []byte(cur)
	flipped[len(flipped)-3] ^= 1
	for name, tc := range map[string]struct {
		codec  *Codec
		rc     task.RequestContext
		cursor string
	}{
		"other principal": {c, task.RequestContext{Endpoint: "mcp", Tenant: "t1", Principal: "bob"}, cur},
		"other tenant":    {c, task.RequestContext{Endpoint: "mcp", Tenant: "t2", Principal: "alice"}, cur},
		"other endpoint":  {c, task.RequestContext{Endpoint: "admin", Tenant: "t1", Principal: "alice"}, cur},
		// Field boundaries count: ("mcpt", "1") is not ("mcp", "t1").
		"shifted fields": {c, task.RequestContext{Endpoint: "mcpt", Tenant: "1", Principal: "alice"}, cur},
		"other key":      {other, owner, cur},
		"altered":        {c, owner, string(flipped)},
		"empty":          {c, owner, ""},
		"no prefix":      {c, owner, strings.TrimPrefix(cur, prefix)},
		"not base64":     {c, owner, prefix + "!!!!"},
		"too short":      {c, owner, prefix + "AAAA"},
		"too long":       {c, owner, cur + strings.Repeat("A", MaxLen)},
		"padded":         {c, owner, cur + "="},
	} {
		if _, err := tc.codec.Decode(tc.rc, tc.cursor); !errors.Is(err, task.ErrBadCursor) {
			t.Errorf("%s: err = %v, want task.ErrBadCursor", name, err)
		}
	}
}

func TestBounds(t *testing.T) {
	if _, err := New([]byte("short")); err == nil {
		t.Error("New accepted a 5-byte key")
	}
	c, _ := New(make([]byte, MinKeyLen))
	if _, err := c.Encode(task.RequestContext{}, Position{ID: strings.Repeat("x", maxID+1)}); err == nil {
		t.Error("Encode accepted an over-long ID")
	}
	for in, want := range map[int]int{-5: 1, 0: 1, 1: 1, 50: 50, MaxLimit: MaxLimit, 1 << 30: MaxLimit} {
		if got := Limit(in); got != want {
			t.Errorf("Limit(%d) = %d, want %d", in, got, want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c, _ := New(make([]byte, 32))
	owner := task.RequestContext{Endpoint: "mcp", Tenant: "t", Principal: "p"}
	cur, _ := c.Encode(owner, Position{At: 7, ID: "id"})
	f.Add(cur)
	f.Add("c1.")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := c.Decode(owner, s)
		if err != nil {
			if !errors.Is(err, task.ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			return
		}
		again, err := c.Encode(owner, p)
		if err != nil || again != s {
			t.Fatalf("decoded cursor %q does not re-encode to itself: %q %v", s, again, err)
		}
	})
}
