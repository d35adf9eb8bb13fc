package stdiotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdoutCarriesOnlyMessages runs `taskwire serve --stdio` at debug
// log level with requests of both eras, a line that is not JSON and one
// over the size limit; stdout holds exactly one JSON-RPC response per
// request, stderr the logs, and the process exits cleanly at EOF.
func TestStdoutCarriesOnlyMessages(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`this is not JSON`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"text.stats","arguments":{"text":"` + strings.Repeat("x", 11<<20) + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"text.stats","arguments":{"text":"a b"}}}`,
	}, "\n") + "\n"
	cmd := serveCmd(t, filepath.Join(t.TempDir(), "tasks.db"))
	cmd.Stdin = strings.NewReader(in)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve --stdio: %v", err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("stdout line is not a JSON-RPC message: %.200q", sc.Text())
		}
		outcome := "result"
		if m.Error != nil {
			outcome = "error"
		}
		got[string(m.ID)] += outcome + " "
	}
	want := map[string]string{"1": "result ", "3": "result ", "null": "error error "}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("id %s: %q, want %q (all: %v)", id, got[id], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("responses %v, want %v", got, want)
	}
	if stderr := cmd.Stderr.(*lockedBuffer).String(); !strings.Contains(stderr, "level=") {
		t.Errorf("no logs on stderr: %q", stderr)
	}
}
