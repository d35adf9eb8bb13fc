package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/store"
)

func TestUserDataDir(t *testing.T) {
	tests := []struct {
		name, goos string
		env        map[string]string
		want       string
		wantErr    bool
	}{
		{"xdg wins", "linux", map[string]string{"XDG_DATA_HOME": "/data", "HOME": "/home/u"}, "/data", false},
		{"relative xdg ignored", "linux", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, "/home/u/.local/share", false},
		{"linux default", "linux", map[string]string{"HOME": "/home/u"}, "/home/u/.local/share", false},
		{"macOS", "darwin", map[string]string{"HOME": "/Users/u"}, "/Users/u/Library/Application Support", false},
		{"windows", "windows", map[string]string{"LocalAppData": `C:\Users\u\AppData\Local`}, `C:\Users\u\AppData\Local`, false},
		{"no home", "linux", map[string]string{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := userDataDir(func(k string) string { return tt.env[k] }, tt.goos)
			if (err != nil) != tt.wantErr || got != filepath.FromSlash(tt.want) && got != tt.want {
				t.Fatalf("userDataDir = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

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
		spec, err := stdioDefaultStore(getenv)
		if err != nil {
			return err
		}
		parsed, err := store.ParseSpec(spec)
		if err != nil {
			return err
		}
		cfg := stdioConfig{Principal: "local", Node: nodeConfig{
			Store: storeSpec{Spec: parsed}, Workers: 1, ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(&stderr, nil)),
		}}
		return runStdio(context.Background(), cfg, strings.NewReader(in), &stdout)
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
