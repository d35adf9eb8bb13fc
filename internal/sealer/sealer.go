// Package sealer seals a small application state for a client to carry
// and echo back, bound to the request it was issued for: AES-256-GCM
// under a server key, with an expiry. The client sees only ciphertext; a
// value it alters, presents with another binding, or keeps past its
// expiry fails to open.
package sealer

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Limits of a sealed value.
const (
	// KeyLength is the length of a key, in bytes.
	KeyLength = 32
	// MaxSealed bounds a sealed value, in encoded bytes, on both sides:
	// Seal refuses to produce a longer one and Open to read it.
	MaxSealed = 64 << 10

	formatV1   = 1
	nonceBytes = 12
)

// ErrInvalid is the error of Open for every value that does not open:
// malformed, altered, sealed under another key or binding, or expired.
// It deliberately says no more.
var ErrInvalid = errors.New("sealer: invalid sealed state")

// ErrTooLarge is the error of Seal when the sealed value would exceed
// MaxSealed.
var ErrTooLarge = errors.New("sealer: sealed state too large")

// Binding is what a sealed value is bound to: Open succeeds only with a
// Binding equal to the one it was sealed with.
type Binding struct {
	Principal string `json:"p"`
	Tenant    string `json:"t"`
	Endpoint  string `json:"e"`
	Method    string `json:"m"`
	Target    string `json:"n"`
	Digest    []byte `json:"d"`
}

func (b Binding) equal(o Binding) bool {
	return b.Principal == o.Principal && b.Tenant == o.Tenant && b.Endpoint == o.Endpoint &&
		b.Method == o.Method && b.Target == o.Target && bytes.Equal(b.Digest, o.Digest)
}

// sealed is the plaintext of a sealed value.
type sealed struct {
	Version int    `json:"v"`
	Expires int64  `json:"x"`
	Round   int    `json:"r"`
	State   []byte `json:"s,omitempty"`
	Binding
}

// Sealer seals and opens values under one key. It is safe for concurrent
// use.
type Sealer struct {
	aead cipher.AEAD
	ttl  time.Duration
	now  func() time.Time
}

// New returns a Sealer using key, whose values expire ttl after they are
// sealed by the clock now. It fails when key is not KeyLength bytes.
func New(key []byte, ttl time.Duration, now func() time.Time) (*Sealer, error) {
	if len(key) != KeyLength {
		return nil, fmt.Errorf("sealer: the key must be %d bytes, got %d", KeyLength, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealer: key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealer: cipher: %w", err)
	}
	return &Sealer{aead: aead, ttl: ttl, now: now}, nil
}

// Seal returns state and round sealed under b, as unpadded base64url. It
// fails with ErrTooLarge when the result would exceed MaxSealed.
func (s *Sealer) Seal(b Binding, round int, state []byte) (string, error) {
	plain, err := json.Marshal(sealed{
		Version: formatV1,
		Expires: s.now().Add(s.ttl).UnixMilli(),
		Round:   round,
		State:   state,
		Binding: b,
	})
	if err != nil {
		return "", fmt.Errorf("sealer: encode: %w", err)
	}
	nonce := make([]byte, nonceBytes, nonceBytes+len(plain)+s.aead.Overhead())
	rand.Read(nonce)
	enc := base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, nil))
	if len(enc) > MaxSealed {
		return "", ErrTooLarge
	}
	return enc, nil
}

// Open verifies enc against b and returns the state and round it was
// sealed with. It fails with ErrInvalid, whatever the reason.
func (s *Sealer) Open(enc string, b Binding) (state []byte, round int, err error) {
	if len(enc) > MaxSealed {
		return nil, 0, ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < nonceBytes+s.aead.Overhead() {
		return nil, 0, ErrInvalid
	}
	plain, err := s.aead.Open(nil, raw[:nonceBytes], raw[nonceBytes:], nil)
	if err != nil {
		return nil, 0, ErrInvalid
	}
	var st sealed
	if err := json.Unmarshal(plain, &st); err != nil || st.Version != formatV1 {
		return nil, 0, ErrInvalid
	}
	if s.now().UnixMilli() > st.Expires || !st.Binding.equal(b) {
		return nil, 0, ErrInvalid
	}
	return st.State, st.Round, nil
}

// Digest hashes the canonical form of a JSON value (tool or prompt
// arguments), so that a retry that re-encodes the same value (other member
// order or white space, absent instead of {}) still matches. Numbers keep
// their spelling, so large integers that a float64 would merge stay
// distinct. A value that is not JSON is hashed as its bytes.
func Digest(raw json.RawMessage) []byte {
	var v any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			v = string(raw)
		}
	}
	canon, _ := json.Marshal(v) // maps marshal with sorted keys
	sum := sha256.Sum256(canon)
	return sum[:]
}
