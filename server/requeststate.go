package server

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

// Limits of sealed request state.
const (
	maxSealedState  = 64 << 10 // encoded bytes accepted from a client
	maxStateRounds  = 10       // input_required rounds per request
	stateFormatV1   = 1
	stateKeyLength  = 32
	stateNonceBytes = 12
)

// stateSealer seals MRTR requestState with AES-256-GCM. The client sees only
// ciphertext; a value it alters, replays elsewhere, or keeps past its expiry
// fails to open.
type stateSealer struct {
	aead cipher.AEAD
	ttl  time.Duration
	now  func() time.Time
}

func newStateSealer(key []byte, ttl time.Duration, now func() time.Time) (*stateSealer, error) {
	if len(key) != stateKeyLength {
		return nil, fmt.Errorf("server: RequestStateKey must be %d bytes, got %d", stateKeyLength, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("server: request state key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("server: request state cipher: %w", err)
	}
	return &stateSealer{aead: aead, ttl: ttl, now: now}, nil
}

// stateBinding is what a sealed state is bound to.
type stateBinding struct {
	Principal string `json:"p"`
	Tenant    string `json:"t"`
	Endpoint  string `json:"e"`
	Method    string `json:"m"`
	Target    string `json:"n"`
	Digest    []byte `json:"d"`
}

type sealedState struct {
	Version int    `json:"v"`
	Expires int64  `json:"x"`
	Round   int    `json:"r"`
	State   []byte `json:"s,omitempty"`
	stateBinding
}

var errBadRequestState = errors.New("server: invalid request state")

// argumentsDigest hashes the canonical form of tool or prompt arguments, so
// that a retry that re-encodes the same arguments (other member order or
// white space, absent instead of {}) still matches. Numbers keep their
// spelling, so large integers that a float64 would merge stay distinct.
func argumentsDigest(raw json.RawMessage) []byte {
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

func (s *stateSealer) seal(b stateBinding, round int, state []byte) (string, error) {
	plain, err := json.Marshal(sealedState{
		Version:      stateFormatV1,
		Expires:      s.now().Add(s.ttl).UnixMilli(),
		Round:        round,
		State:        state,
		stateBinding: b,
	})
	if err != nil {
		return "", err
	}
	nonce := make([]byte, stateNonceBytes, stateNonceBytes+len(plain)+s.aead.Overhead())
	rand.Read(nonce)
	out := s.aead.Seal(nonce, nonce, plain, nil)
	enc := base64.RawURLEncoding.EncodeToString(out)
	if len(enc) > maxSealedState {
		return "", errors.New("server: request state too large")
	}
	return enc, nil
}

// open verifies a sealed state against the binding of the current request
// and returns the application state and round.
func (s *stateSealer) open(enc string, b stateBinding) ([]byte, int, error) {
	if len(enc) > maxSealedState {
		return nil, 0, errBadRequestState
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < stateNonceBytes+s.aead.Overhead() {
		return nil, 0, errBadRequestState
	}
	plain, err := s.aead.Open(nil, raw[:stateNonceBytes], raw[stateNonceBytes:], nil)
	if err != nil {
		return nil, 0, errBadRequestState
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil || st.Version != stateFormatV1 {
		return nil, 0, errBadRequestState
	}
	if s.now().UnixMilli() > st.Expires {
		return nil, 0, errBadRequestState
	}
	got := st.stateBinding
	if got.Principal != b.Principal || got.Tenant != b.Tenant || got.Endpoint != b.Endpoint ||
		got.Method != b.Method || got.Target != b.Target || string(got.Digest) != string(b.Digest) {
		return nil, 0, errBadRequestState
	}
	return st.State, st.Round, nil
}
