package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/internal/sealer"
)

// Limits of sealed request state.
const (
	maxStateRounds = 10               // input_required rounds per request
	stateKeyLength = sealer.KeyLength // of Options.RequestStateKey
)

// stateBinding is what a sealed MRTR requestState is bound to: the
// caller, the endpoint, the method, its target and its arguments.
type stateBinding = sealer.Binding

// stateSealer seals MRTR requestState (internal/sealer): the client sees
// only ciphertext, and a value it alters, replays under another binding or
// keeps past Options.RequestStateTTL fails to open.
type stateSealer struct{ s *sealer.Sealer }

func newStateSealer(key []byte, ttl time.Duration, now func() time.Time) (*stateSealer, error) {
	s, err := sealer.New(key, ttl, now)
	if err != nil {
		return nil, fmt.Errorf("server: RequestStateKey: %w", err)
	}
	return &stateSealer{s: s}, nil
}

// seal seals state for round under b.
func (s *stateSealer) seal(b stateBinding, round int, state []byte) (string, error) {
	return s.s.Seal(b, round, state)
}

// open verifies a sealed state against the binding of the current request
// and returns the application state and round.
func (s *stateSealer) open(enc string, b stateBinding) ([]byte, int, error) {
	return s.s.Open(enc, b)
}

// argumentsDigest is the digest of tool or prompt arguments a binding
// carries (sealer.Digest).
func argumentsDigest(raw json.RawMessage) []byte { return sealer.Digest(raw) }
