package oauthclient

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// MaxAssertionBytes bounds an assertion (and the output of the command
// that prints one).
const MaxAssertionBytes = 64 << 10

// clientAssertionTTL is the lifetime of the private_key_jwt assertions
// this package signs.
const clientAssertionTTL = time.Minute

// ErrAssertionExpired: the assertion is a JWT whose exp has passed, so the
// authorization server would refuse it; the platform has not rotated it.
var ErrAssertionExpired = errors.New("oauthclient: the assertion has expired")

// AssertionSource returns an assertion (a JWT) to present, for example a
// workload identity token the platform provides. It is called once per
// token request, never for each MCP request. Errors are returned as they
// are, wrapped.
type AssertionSource func(ctx context.Context) (string, error)

// StaticAssertion always returns jwt.
func StaticAssertion(jwt string) AssertionSource {
	return func(context.Context) (string, error) { return jwt, nil }
}

// AssertionFile reads the assertion from path at every token request, so
// a token the platform rotates in place (a projected Kubernetes service
// account token, say) is picked up. Surrounding white space is dropped; a
// missing, empty or larger than MaxAssertionBytes file is an error.
func AssertionFile(path string) AssertionSource {
	return func(context.Context) (string, error) {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("oauthclient: assertion file: %w", err)
		}
		defer f.Close()
		return readAssertion(f, "assertion file "+path)
	}
}

// AssertionCommand runs name with args at every token request and takes
// the assertion from its standard output (what a platform's credential
// helper prints). The command ends with ctx (each token request is bounded
// by Options.Timeout); its standard error is discarded, since it may hold
// secrets; a non-zero exit status, empty output or more than
// MaxAssertionBytes is an error.
func AssertionCommand(name string, args ...string) AssertionSource {
	return func(ctx context.Context) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return "", fmt.Errorf("oauthclient: assertion command: %w", err)
		}
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("oauthclient: assertion command: %w", err)
		}
		s, rerr := readAssertion(out, "assertion command "+name)
		_, _ = io.Copy(io.Discard, out) // let it finish writing whatever is left
		if err := cmd.Wait(); err != nil {
			return "", fmt.Errorf("oauthclient: assertion command %s: %w", name, err)
		}
		return s, rerr
	}
}

func readAssertion(r io.Reader, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxAssertionBytes+1))
	if err != nil {
		return "", fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	if len(data) > MaxAssertionBytes {
		return "", fmt.Errorf("oauthclient: %s: more than %d bytes", what, MaxAssertionBytes)
	}
	s := string(bytes.TrimSpace(data))
	if s == "" {
		return "", fmt.Errorf("oauthclient: %s: empty", what)
	}
	return s, nil
}

// assertion gets an assertion from src under the request timeout and
// refuses one that cannot be sent: too large, containing white space, or
// a JWT past its exp by the Authorizer's clock.
func (a *Authorizer) assertion(ctx context.Context, src AssertionSource) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	s, err := src(ctx)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxAssertionBytes || strings.ContainsAny(s, " \t\r\n") {
		return "", errors.New("oauthclient: the assertion is empty, too large or not one token")
	}
	if exp, ok := jwtExpiry(s); ok && !a.opts.Now().Before(exp) {
		return "", fmt.Errorf("%w (at %s)", ErrAssertionExpired, exp.UTC().Format(time.RFC3339))
	}
	return s, nil
}

// jwtExpiry reads the exp claim of a compact JWT without verifying it
// (the authorization server does that); false when s is not a JWT with a
// numeric exp.
func jwtExpiry(s string) (time.Time, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &c) != nil || c.Exp == nil {
		return time.Time{}, false
	}
	f, err := c.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// clientAssertion signs the private_key_jwt assertion (RFC 7523 §3):
// iss and sub the client ID, aud the authorization server's issuer, a
// fresh jti and a one-minute lifetime.
func (a *Authorizer) clientAssertion(issuer string) (string, error) {
	now := a.opts.Now()
	s, err := signJWT(a.opts.ClientKey, a.opts.ClientKeyID, map[string]any{
		"iss": a.opts.ClientID, "sub": a.opts.ClientID, "aud": issuer, "jti": randomString(),
		"iat": now.Unix(), "exp": now.Add(clientAssertionTTL).Unix(),
	})
	if err != nil {
		return "", fmt.Errorf("oauthclient: the client assertion: %w", err)
	}
	return s, nil
}

// ParsePrivateKey reads the first private key of PEM data: PKCS #8
// ("PRIVATE KEY"), SEC 1 ("EC PRIVATE KEY") or PKCS #1 ("RSA PRIVATE
// KEY"), for Options.ClientKey. Encrypted keys are not supported.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("oauthclient: no PEM private key found")
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("oauthclient: parse %s: %w", strings.ToLower(block.Type), err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("oauthclient: unsupported private key type %T", key)
		}
		if _, _, err := jwsAlg(signer); err != nil {
			return nil, err
		}
		return signer, nil
	}
}
