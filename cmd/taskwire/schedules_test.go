package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeSchedules runs serve with a --schedules file: the schedule
// creates a reports.generate task for its principal within a period, and
// the console's overview lists it with a link to that task. A bad file
// stops serve before it starts, naming the problem.
func TestServeSchedules(t *testing.T) {
	dir := t.TempDir()
	const tok = "serve-schedules-token-0123"
	tokenFile := filepath.Join(dir, "token")
	file := filepath.Join(dir, "schedules.json")
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(`{"schedules": [{"name": "every-second", "tool": "reports.generate",
		"arguments": {"accountId": "acme", "rows": 10, "seconds": 0}, "principal": "ops", "every": "1s"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := startServe(t, noEnv, "--admin-token-file", tokenFile, "--schedules", file)
	consoleURL := consoleLine.FindStringSubmatch(out.String())[1]
	taskLink := regexp.MustCompile(`<th scope="row">every-second</th><td>reports.generate</td><td>every 1s</td>.*href="/console/tasks/([^"]+)"`)
	deadline := time.Now().Add(waitFor)
	for {
		req, _ := http.NewRequest(http.MethodGet, consoleURL+"/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if taskLink.Match(body) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console lists no scheduled task after %v:\n%s", waitFor, body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schedules": [{"name": "x", "tool": "reports.generate", "every": "1h"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var errOut strings.Builder
	err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--store", "memory:", "--schedules", bad}, &errOut, &errOut, noEnv)
	if err == nil || !strings.Contains(err.Error(), `--schedules: schedule "x": an Identity with a Principal is required`) {
		t.Errorf("serve with a bad schedules file: %v", err)
	}
}
