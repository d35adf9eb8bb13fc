package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// Fixtures of the legacy tasks tests: a server with one endpoint serving
// every revision and Tasks, the development admission (a Bearer name is
// the identity) and the memory manager driven by the test as the worker.
const (
	ltTasksCaps = `{"tasks":{"requests":{"tools":{"call":{}}}},"elicitation":{}}`
	ltNoCaps    = `{"elicitation":{}}`
	ltV11       = "2025-11-25"
	ltV06       = "2025-06-18"
	ltFormKey   = "approve"
	ltForm      = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
)

type ltIn struct {
	Key string `json:"key,omitempty"`
}

type ltOut struct {
	Sum int `json:"sum"`
}

// ltRig is the server and the worker side of its tasks.
type ltRig struct {
	t   *testing.T
	srv *server.Server
	mem *memory.Manager
	url string

	created chan string // IDs of created (or re-attached) tasks, in order

	mu   sync.Mutex
	keys map[string]string // idempotency key → task ID (the application's dedup)
}

// newLTRig builds the rig; mutate may change the options.
func newLTRig(t *testing.T, mutate func(*server.Options)) *ltRig {
	t.Helper()
	return newLTRigWith(t, 0, mutate)
}

// newLTRigPaged is newLTRig with an endpoint page size.
func newLTRigPaged(t *testing.T, pageSize int) *ltRig {
	t.Helper()
	return newLTRigWith(t, pageSize, nil)
}

func newLTRigWith(t *testing.T, pageSize int, mutate func(*server.Options)) *ltRig {
	t.Helper()
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &ltRig{t: t, mem: mem, created: make(chan string, 16), keys: map[string]string{}}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "tasks", Version: "1.0.0", PageSize: pageSize,
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	handler := func(_ context.Context, _ *server.Request, in ltIn, cc *task.CreationContext) (task.Handle, error) {
		return r.create(cc, in.Key)
	}
	server.AddTaskTool[ltIn, ltOut](ep, &mcp.Tool{Name: "build"}, handler, server.WithTaskInput(task.InputElicitationForm))
	server.AddTaskTool[ltIn, ltOut](ep, &mcp.Tool{Name: "build.inline"}, handler,
		server.WithTaskInput(task.InputElicitationForm), server.WithWaitInline())
	ep.AddRawTaskTool(&mcp.Tool{Name: "opt", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *server.Request) (*mcp.CallToolResult, *task.Handle, error) {
			cc := req.TaskCreation()
			if cc == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "inline"}}}, nil, nil
			}
			h, err := r.create(cc, "")
			return nil, &h, err
		})
	ep.AddRawTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}}, nil
		})
	opts := server.Options{
		Endpoints: []*server.Endpoint{ep}, TaskManager: mem, Admission: server.DevAdmission(),
		KeepAliveInterval: time.Hour, // keep-alives only where a test asks for them
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r.srv = srv
	r.url = newLegacyRig(t, srv).url
	return r
}

// create is the tools' handler: a new task, or the one an idempotency key
// already names.
func (r *ltRig) create(cc *task.CreationContext, key string) (task.Handle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.keys[key]; ok && key != "" {
		r.created <- id
		return task.Handle{ID: id}, nil
	}
	tk, err := r.mem.Create(cc)
	if err != nil {
		return task.Handle{}, err
	}
	if key != "" {
		r.keys[key] = tk.ID()
	}
	r.created <- tk.ID()
	return task.Handle{ID: tk.ID()}, nil
}

// client opens a session as identity (a Bearer name, "" for anonymous).
func (r *ltRig) client(version, caps, identity string) *legacyClient {
	r.t.Helper()
	c := &legacyClient{t: r.t, url: r.url}
	if identity != "" {
		c.auth = "Bearer " + identity
	}
	c.mustInitialize(version, caps)
	return c
}

// nextCreated returns the ID of the next task a tool handler returned.
func (r *ltRig) nextCreated() string {
	r.t.Helper()
	select {
	case id := <-r.created:
		return id
	case <-time.After(10 * time.Second):
		r.t.Fatal("no task was created")
		return ""
	}
}

// hints follows the manager's hints for id.
func (r *ltRig) hints(id string) <-chan struct{} {
	ch := make(chan struct{}, 64)
	stop := r.mem.EventPublisher().Subscribe(func(h string) {
		if h == id {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	r.t.Cleanup(stop)
	return ch
}

// waitFor waits, on hints, until cond holds for the task.
func (r *ltRig) waitFor(id string, hints <-chan struct{}, cond func(task.Task) bool) task.Task {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		tk, err := r.mem.Find(id)
		if err != nil {
			r.t.Fatal(err)
		}
		if cond(tk) {
			return tk
		}
		select {
		case <-hints:
		case <-deadline:
			r.t.Fatalf("task never reached the condition; status %s", tk.Status())
		}
	}
}

func ltResult(sum int) *mcp.CallToolResult {
	b, _ := json.Marshal(ltOut{Sum: sum})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: b}
}

// legacySchema is the official 2025-11-25 schema copied into mcp/testdata.
var legacySchema = func() func() *schemacheck.Set {
	var once sync.Once
	var set *schemacheck.Set
	return func() *schemacheck.Set {
		once.Do(func() {
			src, err := os.ReadFile("../mcp/testdata/schema-2025-11-25/schema.json")
			if err != nil {
				panic(err)
			}
			set = schemacheck.NewSet("https://modelcontextprotocol.io/schema/2025-11-25/schema.json", src)
		})
		return set
	}
}()

// mustValidate checks a message part against a 2025-11-25 definition.
func mustValidate(t *testing.T, def string, doc []byte) {
	t.Helper()
	if err := legacySchema().Validate(def, doc); err != nil {
		t.Errorf("%s: %s\n%v", def, doc, err)
	}
}

// statusOK fails unless the reply has HTTP 200.
func statusOK(t *testing.T, rep *legacyReply) {
	t.Helper()
	if rep.status != http.StatusOK {
		t.Fatalf("status %d, body %s", rep.status, rep.body)
	}
}

// ltStream posts body and delivers the messages of the response as they
// arrive; the channel closes at the end of the response. cancel
// disconnects.
func ltStream(t *testing.T, c *legacyClient, body string) (msgs <-chan legacyMsg, cancel func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	res, err := http.DefaultClient.Do(c.newPost(ctx, body))
	if err != nil {
		stop()
		t.Fatal(err)
	}
	ch, wait := sseMessages(res)
	cancel = func() { stop(); wait() }
	t.Cleanup(cancel)
	return ch, cancel
}

// sseMessages delivers the messages of an SSE response as they arrive
// and closes the channel at its end; wait waits for the reader, once the
// response's context is canceled.
func sseMessages(res *http.Response) (msgs <-chan legacyMsg, wait func()) {
	ch := make(chan legacyMsg, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(ch)
		defer res.Body.Close()
		br := bufio.NewReader(res.Body)
		for {
			data, err := readSSEData(br)
			if err != nil {
				return
			}
			var m legacyMsg
			json.Unmarshal(data, &m)
			ch <- m
		}
	})
	return ch, wg.Wait
}

// next returns the next message of a stream.
func next(t *testing.T, msgs <-chan legacyMsg) legacyMsg {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
	}
	return legacyMsg{}
}

// httpDo posts body with the client's headers and returns the raw response.
func httpDo(c *legacyClient, body string) (*http.Response, error) {
	return http.DefaultClient.Do(c.newPost(context.Background(), body))
}
