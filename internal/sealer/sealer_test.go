package sealer

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clock is an injected clock the tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newSealer(t *testing.T, key byte, c *clock) *Sealer {
	t.Helper()
	s, err := New(bytes.Repeat([]byte{key}, KeyLength), time.Minute, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRefusesKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := New(make([]byte, n), time.Minute, time.Now); err == nil {
			t.Errorf("New with a %d-byte key: no error", n)
		}
	}
}

// TestOpen: a sealed value opens, with its state and round, only under the
// same key and binding, before its expiry and unaltered.
func TestOpen(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	s := newSealer(t, 1, c)
	b := Binding{Principal: "alice", Tenant: "t1", Endpoint: "/mcp", Method: "tools/call", Target: "deploy", Digest: Digest([]byte(`{"a":1}`))}
	enc, err := s.Seal(b, 3, []byte("state"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	altered := base64.RawURLEncoding.EncodeToString(raw)
	other := func(f func(*Binding)) Binding { o := b; o.Digest = bytes.Clone(b.Digest); f(&o); return o }
	type got struct {
		State string
		Round int
		Err   error
	}
	for _, tc := range []struct {
		name  string
		s     *Sealer
		enc   string
		b     Binding
		after time.Duration
		want  got
	}{
		{"same binding", s, enc, b, 0, got{"state", 3, nil}},
		{"at expiry", s, enc, b, time.Minute, got{"state", 3, nil}},
		{"expired", s, enc, b, time.Minute + time.Millisecond, got{Err: ErrInvalid}},
		{"other key", newSealer(t, 2, c), enc, b, 0, got{Err: ErrInvalid}},
		{"other principal", s, enc, other(func(o *Binding) { o.Principal = "bob" }), 0, got{Err: ErrInvalid}},
		{"other tenant", s, enc, other(func(o *Binding) { o.Tenant = "t2" }), 0, got{Err: ErrInvalid}},
		{"other endpoint", s, enc, other(func(o *Binding) { o.Endpoint = "/other" }), 0, got{Err: ErrInvalid}},
		{"other method", s, enc, other(func(o *Binding) { o.Method = "prompts/get" }), 0, got{Err: ErrInvalid}},
		{"other target", s, enc, other(func(o *Binding) { o.Target = "undeploy" }), 0, got{Err: ErrInvalid}},
		{"other arguments", s, enc, other(func(o *Binding) { o.Digest = Digest([]byte(`{"a":2}`)) }), 0, got{Err: ErrInvalid}},
		{"altered", s, altered, b, 0, got{Err: ErrInvalid}},
		{"truncated", s, enc[:10], b, 0, got{Err: ErrInvalid}},
		{"not base64url", s, enc + "=", b, 0, got{Err: ErrInvalid}},
		{"empty", s, "", b, 0, got{Err: ErrInvalid}},
		{"over MaxSealed", s, strings.Repeat("A", MaxSealed+1), b, 0, got{Err: ErrInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := c.t
			c.t = c.t.Add(tc.after)
			defer func() { c.t = start }()
			state, round, err := tc.s.Open(tc.enc, tc.b)
			if diff := cmp.Diff(tc.want, got{string(state), round, err}, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
				t.Errorf("Open (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSealRefusesTooLarge(t *testing.T) {
	s := newSealer(t, 1, &clock{t: time.Unix(0, 0)})
	if _, err := s.Seal(Binding{}, 1, make([]byte, MaxSealed)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Seal of %d bytes = %v, want ErrTooLarge", MaxSealed, err)
	}
}

// TestDigest: arguments that encode the same value digest alike; other
// values, and numbers a float64 would merge, do not.
func TestDigest(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b" : [1, 2], "a" : 1 }`, true},
		{``, `{}`, true},
		{`null`, `{}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`, false},
		{`{"a":1`, `{"a":1}`, false},
	} {
		if same := bytes.Equal(Digest([]byte(tc.a)), Digest([]byte(tc.b))); same != tc.same {
			t.Errorf("Digest(%q) == Digest(%q): %v, want %v", tc.a, tc.b, same, tc.same)
		}
	}
}
