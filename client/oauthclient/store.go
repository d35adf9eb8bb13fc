package oauthclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Record is what a Store keeps for one MCP server: the token and the
// client registration it was obtained with.
type Record struct {
	// ServerURL is the MCP endpoint the record belongs to (the Store key).
	ServerURL string `json:"server_url"`
	// Resource is the protected resource's identifier (RFC 9728 "resource"),
	// sent as the RFC 8707 resource parameter.
	Resource string `json:"resource"`
	// Issuer is the authorization server that issued the token and the
	// client registration; a registration is never used with another one.
	Issuer string `json:"issuer"`
	// TokenURL is the issuer's token endpoint, for refreshing.
	TokenURL string `json:"token_url"`
	// ClientID, ClientSecret and AuthMethod are the client registration:
	// AuthMethod is "none", "client_secret_basic", "client_secret_post" or
	// "private_key_jwt".
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"auth_method"`
	// Scopes are the scopes requested; Granted the ones the token response
	// named (Scopes when it named none).
	Scopes  []string `json:"scopes,omitempty"`
	Granted []string `json:"granted,omitempty"`
	// Grant is the grant type that obtained the token when it was a
	// machine flow (Options.Grant): "client_credentials" or the JWT bearer
	// URN; empty for the authorization code flow.
	Grant string `json:"grant,omitempty"`
	// AccessToken, RefreshToken, TokenType and Expiry are the token.
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// DPoPThumbprint is, for a DPoP-bound token (TokenType "DPoP"), the
	// RFC 7638 thumbprint of the key it is bound to; DPoPKey that key, PKCS
	// #8 in base64, unless it is Options.DPoPKey.
	DPoPThumbprint string `json:"dpop_jkt,omitempty"`
	DPoPKey        string `json:"dpop_key,omitempty"`
}

// Store keeps one Record per MCP server URL. Implementations must be safe
// for concurrent use.
type Store interface {
	// Load returns the record for serverURL, or nil and no error when there
	// is none.
	Load(serverURL string) (*Record, error)
	// Save replaces the record for r.ServerURL.
	Save(r *Record) error
	// Delete removes the record for serverURL; a missing one is no error.
	Delete(serverURL string) error
}

// MaxRecordBytes bounds a stored record; a larger file is refused.
const MaxRecordBytes = 64 << 10

// FileStore keeps each record in its own JSON file, named by the SHA-256 of
// the server URL, in one directory. The directory is created with mode
// 0700 and every file is written with mode 0600, atomically (a temporary
// file renamed over the old one), so that a reader never sees half a
// record.
type FileStore struct {
	dir string
}

// NewFileStore returns a FileStore in dir. The directory is created on the
// first Save.
func NewFileStore(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("oauthclient: FileStore needs a directory")
	}
	return &FileStore{dir: dir}, nil
}

// DefaultDir is where the taskwire command keeps tokens:
// os.UserConfigDir()/taskwire/tokens. It fails when the user has no
// configuration directory (no $HOME or $XDG_CONFIG_HOME).
func DefaultDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("oauthclient: no configuration directory: %w", err)
	}
	return filepath.Join(base, "taskwire", "tokens"), nil
}

// DefaultFileStore returns a FileStore in DefaultDir.
func DefaultFileStore() (*FileStore, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return NewFileStore(dir)
}

// Dir is the store's directory.
func (s *FileStore) Dir() string { return s.dir }

// Path is the file that holds serverURL's record.
func (s *FileStore) Path(serverURL string) string {
	sum := sha256.Sum256([]byte(StoreKey(serverURL)))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// StoreKey is the form of a server URL records are keyed by: the URL
// without a fragment, with a lower-case scheme and host.
func StoreKey(serverURL string) string {
	if i := strings.IndexByte(serverURL, '#'); i >= 0 {
		serverURL = serverURL[:i]
	}
	scheme, rest, ok := strings.Cut(serverURL, "://")
	if !ok {
		return serverURL
	}
	host, path, _ := strings.Cut(rest, "/")
	key := strings.ToLower(scheme) + "://" + strings.ToLower(host)
	if path != "" {
		key += "/" + path
	}
	return key
}

// Load implements Store.
func (s *FileStore) Load(serverURL string) (*Record, error) {
	f, err := os.Open(s.Path(serverURL))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauthclient: read token store: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("oauthclient: read token store: %w", err)
	}
	if len(data) > MaxRecordBytes {
		return nil, errors.New("oauthclient: stored record is too large")
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("oauthclient: stored record is not valid JSON: %w", err)
	}
	if StoreKey(r.ServerURL) != StoreKey(serverURL) {
		return nil, nil
	}
	return &r, nil
}

// Save implements Store.
func (s *FileStore) Save(r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("oauthclient: encode record: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("oauthclient: create token directory: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone; tighten it.
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("oauthclient: token directory mode: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".record-*")
	if err != nil {
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name) // after a successful rename there is nothing to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	if err := os.Rename(name, s.Path(r.ServerURL)); err != nil {
		return fmt.Errorf("oauthclient: write token store: %w", err)
	}
	return nil
}

// Delete implements Store.
func (s *FileStore) Delete(serverURL string) error {
	err := os.Remove(s.Path(serverURL))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("oauthclient: delete token: %w", err)
	}
	return nil
}
