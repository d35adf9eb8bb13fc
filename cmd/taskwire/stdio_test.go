package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/store"
)

// TestServeStdioCommand runs `serve --stdio` in process on pipes: the
// default store lands in the data directory, stdout carries only the
// responses, and the end of stdin stops the command cleanly.
func TestServeStdioCommand(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": data, "HOME": t.TempDir()}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"hash.sha256","arguments":{"text":"abc"}}}`,
		`not json`,
	}, "\n") + "\n"
	var stdout, stderr syncBuffer
	getenv := func(k string) string { return env[k] }
	err := func() error {
		// The store serve --stdio defaults to (nodecmd's tests check
		// the default itself).
		dir := filepath.Join(getenv("XDG_DATA_HOME"), "taskwire")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		parsed, err := store.ParseSpec("sqlite:" + filepath.Join(dir, "taskwire.db"))
		if err != nil {
			return err
		}
		n, err := node.New(withDemo(node.Config{
			StoreSpec: node.StoreSpec{Spec: parsed}, Workers: 1, ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(&stderr, nil)),
			Stdio: &node.Stdio{Principal: "local", In: strings.NewReader(in), Out: &stdout},
		}))
		if err != nil {
			return err
		}
		return n.Run(context.Background())
	}()
	if err != nil {
		t.Fatalf("serve --stdio: %v (stderr %s)", err, stderr.String())
	}
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON", sc.Text())
		}
		ids = append(ids, string(m.ID))
	}
	slices.Sort(ids) // requests run concurrently
	if diff := cmp.Diff([]string{"1", "2", "null"}, ids); diff != "" {
		t.Errorf("response ids (-want +got):\n%s", diff)
	}
	if !strings.Contains(stdout.String(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
		t.Errorf("no digest in %s", stdout.String())
	}
	if matches, _ := filepath.Glob(filepath.Join(data, "taskwire", "taskwire.db")); len(matches) != 1 {
		t.Errorf("no store in the data directory")
	}
}
