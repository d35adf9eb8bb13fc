package mcp

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestIDUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    string // Raw() of the decoded ID
		wantErr bool
	}{
		{in: `"abc"`, want: `"abc"`},
		{in: `""`, want: `""`},
		{in: `"\u0041\n"`, want: `"\u0041\n"`},
		{in: `0`, want: `0`},
		{in: `42`, want: `42`},
		{in: `-7`, want: `-7`},
		{in: `9223372036854775807`, want: `9223372036854775807`},
		{in: `  12 `, want: `12`},
		{in: `1.5`, wantErr: true},
		{in: `1.0`, wantErr: true},
		{in: `1e3`, wantErr: true},
		{in: `-`, wantErr: true},
		{in: `01`, wantErr: true},
		{in: `-01`, wantErr: true},
		{in: `00`, wantErr: true},
		{in: `12345678901234567890`, wantErr: true},
		{in: `null`, wantErr: true},
		{in: `true`, wantErr: true},
		{in: `{}`, wantErr: true},
		{in: `[1]`, wantErr: true},
		{in: `"unterminated`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tt := range tests {
		var id ID
		err := id.UnmarshalJSON([]byte(tt.in))
		if tt.wantErr {
			if err == nil {
				t.Errorf("UnmarshalJSON(%s) = %s, want error", tt.in, id)
			}
			continue
		}
		if err != nil {
			t.Errorf("UnmarshalJSON(%s) error: %v", tt.in, err)
			continue
		}
		if got := string(id.Raw()); got != tt.want {
			t.Errorf("UnmarshalJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestIDConstructors(t *testing.T) {
	tests := []struct {
		id   ID
		want string
	}{
		{StringID("a\"b"), `"a\"b"`},
		{IntID(-3), `-3`},
		{IntID(0), `0`},
		{ID{}, `null`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("Marshal(%v) = %s, want %s", tt.id, b, tt.want)
		}
	}
	if !(ID{}).IsZero() || IntID(0).IsZero() || StringID("").IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantErr    bool
		wantID     string // Raw() of the returned request's ID, "" if no request
		wantMethod string
		wantParams string
	}{
		{name: "string id", in: `{"jsonrpc":"2.0","id":"x-1","method":"tools/list","params":{}}`, wantID: `"x-1"`, wantMethod: "tools/list", wantParams: `{}`},
		{name: "int id", in: `{"jsonrpc":"2.0","id":5,"method":"tools/call"}`, wantID: `5`, wantMethod: "tools/call"},
		{name: "negative id", in: `{"jsonrpc":"2.0","id":-5,"method":"m"}`, wantID: `-5`, wantMethod: "m"},
		{name: "zero id", in: `{"jsonrpc":"2.0","id":0,"method":"m"}`, wantID: `0`, wantMethod: "m"},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, wantID: `null`, wantMethod: "notifications/cancelled", wantParams: `{"requestId":1}`},
		{name: "white space", in: " \n{ \"method\" : \"m\" , \"id\" : 3 , \"jsonrpc\" : \"2.0\" , \"params\" : { } }\n", wantID: `3`, wantMethod: "m", wantParams: `{ }`},
		{name: "unknown members ignored", in: `{"jsonrpc":"2.0","id":1,"method":"m","extra":[1,2]}`, wantID: `1`, wantMethod: "m"},
		{name: "escaped member name", in: `{"jsonrpc":"2.0","id":1,"\u006dethod":"m"}`, wantID: `1`, wantMethod: "m"},

		{name: "float id", in: `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, wantErr: true},
		{name: "exponent id", in: `{"jsonrpc":"2.0","id":1e2,"method":"m"}`, wantErr: true},
		{name: "null id", in: `{"jsonrpc":"2.0","id":null,"method":"m"}`, wantErr: true},
		{name: "leading zero id", in: `{"jsonrpc":"2.0","id":007,"method":"m"}`, wantErr: true},
		{name: "bool id", in: `{"jsonrpc":"2.0","id":true,"method":"m"}`, wantErr: true},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{},"method":"m"}`, wantErr: true},
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, wantErr: true},
		{name: "empty batch", in: `[]`, wantErr: true},
		{name: "string body", in: `"x"`, wantErr: true},
		{name: "empty body", in: ``, wantErr: true},
		{name: "trailing data", in: `{"jsonrpc":"2.0","id":1,"method":"m"} {}`, wantErr: true},
		{name: "truncated", in: `{"jsonrpc":"2.0","id":1,"method":"m"`, wantErr: true},
		{name: "duplicate method", in: `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, wantErr: true},

		// Failures after the id was read keep the id.
		{name: "array params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, wantErr: true, wantID: `1`},
		{name: "null params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, wantErr: true, wantID: `1`},
		{name: "string params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":"p"}`, wantErr: true, wantID: `1`},
		{name: "missing jsonrpc", in: `{"id":"a","method":"m"}`, wantErr: true, wantID: `"a"`},
		{name: "wrong jsonrpc", in: `{"jsonrpc":"1.0","id":"a","method":"m"}`, wantErr: true, wantID: `"a"`},
		{name: "numeric jsonrpc", in: `{"jsonrpc":2.0,"id":"a","method":"m"}`, wantErr: true, wantID: `"a"`},
		{name: "missing method", in: `{"jsonrpc":"2.0","id":2}`, wantErr: true, wantID: `2`},
		{name: "empty method", in: `{"jsonrpc":"2.0","id":2,"method":""}`, wantErr: true, wantID: `2`},
		{name: "numeric method", in: `{"jsonrpc":"2.0","id":2,"method":5}`, wantErr: true, wantID: `2`},
		{name: "null method", in: `{"jsonrpc":"2.0","id":2,"method":null}`, wantErr: true, wantID: `2`},
		// Member names are case-sensitive: these members are unknown.
		{name: "upper-case members", in: `{"JSONRPC":"2.0","ID":1,"METHOD":"tools/list"}`, wantErr: true, wantID: `null`},
		{name: "shadowing member", in: `{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, wantErr: true, wantID: `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(tt.in))
			if tt.wantErr {
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidRequest {
					t.Fatalf("DecodeRequest error = %v, want a %d error", err, CodeInvalidRequest)
				}
				switch {
				case tt.wantID == "" && req != nil:
					t.Errorf("DecodeRequest returned request %v, want none", req)
				case tt.wantID != "" && req == nil:
					t.Errorf("DecodeRequest returned no request, want id %s", tt.wantID)
				case tt.wantID != "" && string(req.ID.Raw()) != tt.wantID:
					t.Errorf("id = %s, want %s", req.ID.Raw(), tt.wantID)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeRequest error: %v", err)
			}
			if got := string(req.ID.Raw()); got != tt.wantID {
				t.Errorf("id = %s, want %s", got, tt.wantID)
			}
			if req.Method != tt.wantMethod {
				t.Errorf("method = %q, want %q", req.Method, tt.wantMethod)
			}
			if got := string(req.Params); got != tt.wantParams {
				t.Errorf("params = %s, want %s", got, tt.wantParams)
			}
			if req.JSONRPC != JSONRPCVersion {
				t.Errorf("jsonrpc = %q", req.JSONRPC)
			}
			if req.IsNotification() != (tt.wantID == "null") {
				t.Errorf("IsNotification() = %t", req.IsNotification())
			}
		})
	}
}

func TestAppend(t *testing.T) {
	tests := []struct {
		got  []byte
		want string
	}{
		{AppendResult(nil, StringID("a"), []byte(`{"resultType":"complete"}`)), `{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete"}}`},
		{AppendError(nil, IntID(3), MethodNotFound()), `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}`},
		{AppendError(nil, ID{}, InvalidParams("bad")), `{"jsonrpc":"2.0","error":{"code":-32602,"message":"bad"}}`},
		{AppendNotification([]byte("x"), NotificationProgress, []byte(`{"progress":1}`)), `x{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		{AppendNotification(nil, NotificationToolsListChanged, nil), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("got %s\nwant %s", tt.got, tt.want)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"\u00e9\"","method":"m"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"m","params":{}}`,
		`{"jsonrpc":"2.0","id":1.0,"method":"m"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`,
		`{`, `null`, ``, `{"id":99999999999999999999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			var rpcErr *Error
			if !errors.As(err, &rpcErr) {
				t.Fatalf("error %v is not a *Error", err)
			}
			if req != nil {
				checkEncodable(t, req)
			}
			return
		}
		if req.Method == "" {
			t.Fatalf("DecodeRequest(%q) succeeded with an empty method", data)
		}
		if req.Params != nil && !json.Valid(req.Params) {
			t.Fatalf("params %q are not valid JSON", req.Params)
		}
		checkEncodable(t, req)
	})
}

// checkEncodable checks that responses echoing req's id are valid JSON.
func checkEncodable(t *testing.T, req *Request) {
	t.Helper()
	if out := AppendResult(nil, req.ID, []byte(`{}`)); !json.Valid(out) {
		t.Fatalf("AppendResult produced invalid JSON %q", out)
	}
	if out := AppendError(nil, req.ID, InternalError()); !json.Valid(out) {
		t.Fatalf("AppendError produced invalid JSON %q", out)
	}
}
