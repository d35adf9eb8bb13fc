package oauth_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/oauth"
)

// resource is the resource URI of these tests.
const resource = "http://127.0.0.1:1/mcp"

// clock is an injected clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logBuffer is a concurrency-safe log destination.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// rig is a resource server in front of a test issuer, with an injected
// clock and a captured log.
type rig struct {
	iss   *testissuer.Issuer
	rs    *oauth.ResourceServer
	clock *clock
	log   *logBuffer
}

// newRig builds a resource server for iss; mutate may change the options.
func newRig(t testing.TB, mutate func(*oauth.Options)) *rig {
	t.Helper()
	r := &rig{iss: testissuer.New(t), clock: &clock{now: time.Now()}, log: &logBuffer{}}
	opts := oauth.Options{
		Resource: resource,
		Issuer:   r.iss.URL,
		JWKSURL:  r.iss.JWKSURL(),
		Logger:   slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      r.clock.Now,
	}
	if mutate != nil {
		mutate(&opts)
	}
	rs, err := oauth.New(opts)
	if err != nil {
		t.Fatalf("oauth.New: %v", err)
	}
	r.rs = rs
	return r
}
