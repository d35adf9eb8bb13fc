package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reportSchema is the input schema of a tool like reports.generate, closed.
const reportSchema = `{"type":"object","properties":{
	"accountId":{"type":"string","description":"the account"},
	"rows":{"type":"integer"},
	"seconds":{"type":"number"},
	"dryRun":{"type":["boolean","null"]},
	"tags":{"type":"array","items":{"type":"string"}},
	"anything":{}
},"required":["accountId","rows"],"additionalProperties":false}`

func TestParseToolArgs(t *testing.T) {
	closed, err := parseObjectSchema(json.RawMessage(reportSchema))
	if err != nil {
		t.Fatal(err)
	}
	open, err := parseObjectSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		schema  objectSchema
		args    []string
		want    map[string]any
		wantErr string // a substring of the usage error; it names the key
	}{
		{"typed by the schema", closed, []string{"accountId=acme", "rows=1000", "seconds=2.5", "dryRun=true"},
			map[string]any{"accountId": "acme", "rows": int64(1000), "seconds": 2.5, "dryRun": true}, ""},
		{"a string that looks like a number stays a string", closed, []string{"accountId=42"},
			map[string]any{"accountId": "42"}, ""},
		{"empty value", closed, []string{"accountId="}, map[string]any{"accountId": ""}, ""},
		{"value with =", closed, []string{"accountId=a=b"}, map[string]any{"accountId": "a=b"}, ""},
		{"JSON", closed, []string{`tags:=["a","b"]`, "rows:=7", `accountId:="x"`},
			map[string]any{"tags": json.RawMessage(`["a","b"]`), "rows": json.RawMessage(`7`), "accountId": json.RawMessage(`"x"`)}, ""},
		{"untyped key is a string", closed, []string{"anything=1"}, map[string]any{"anything": "1"}, ""},
		{"unknown key of an open schema is a string", open, []string{"other=1", "n=2"},
			map[string]any{"other": "1", "n": int64(2)}, ""},
		{"no arguments", closed, nil, map[string]any{}, ""},
		{"integer does not parse", closed, []string{"rows=many"}, nil, `argument "rows": "many" is not an integer`},
		{"integer with a fraction", closed, []string{"rows=1.5"}, nil, `argument "rows": "1.5" is not an integer`},
		{"number does not parse", closed, []string{"seconds=soon"}, nil, `argument "seconds": "soon" is not a number`},
		{"number is not finite", closed, []string{"seconds=Inf"}, nil, `argument "seconds": "Inf" is not a number`},
		{"boolean does not parse", closed, []string{"dryRun=maybe"}, nil, `argument "dryRun": "maybe" is not a boolean`},
		{"array needs JSON", closed, []string{"tags=a"}, nil, `argument "tags": the input is an array: give it as JSON, key:=JSON`},
		{"invalid JSON", closed, []string{"tags:=[a"}, nil, `argument "tags": "[a" is not valid JSON`},
		{"unknown key of a closed schema", closed, []string{"acount=acme"}, nil,
			`argument "acount": the tool has no such input (it takes accountId, rows, seconds, dryRun, tags, anything)`},
		{"key given twice", closed, []string{"rows=1", "rows:=2"}, nil, `argument "rows" is given twice`},
		{"no =", closed, []string{"rows"}, nil, `argument "rows": want key=value or key:=JSON`},
		{"no key", closed, []string{"=1"}, nil, `want key=value or key:=JSON`},
		{"no key before :=", closed, []string{":=1"}, nil, `want key=value or key:=JSON`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseToolArgs(tc.schema, tc.args)
			if tc.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a usage error containing %q", err, tc.wantErr)
				}
				if exitCode(err) != exitUsage {
					t.Errorf("exit code %d, want %d", exitCode(err), exitUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckRequired: a call that lacks a required input is a usage error
// naming every missing input and the form to pass it in, whichever form
// (key=value, key:=JSON) gave the others.
func TestCheckRequired(t *testing.T) {
	schema, err := parseObjectSchema(json.RawMessage(`{"type":"object","properties":{
		"accountId":{"type":"string"},
		"rows":{"type":"integer"},
		"tags":{"type":"array"},
		"dryRun":{"type":"boolean"}
	},"required":["accountId","rows","tags","accountId","undeclared"]}`))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"accountId=acme", "rows:=7", `tags:=[]`, "undeclared=x"}
	tests := []struct {
		name    string
		args    []string
		wantErr string // the whole message; "" for none
	}{
		{"every required input", all, ""},
		{"JSON null counts as given", []string{"accountId:=null", "rows=1", "tags:=null", "undeclared=1"}, ""},
		{"optional inputs may be left out", append(all[:4:4], "dryRun=true"), ""},
		{"one missing", all[1:], `call: tool "t" needs the argument accountId: add accountId=VALUE (taskwire tools lists every input)`},
		{"several missing, JSON for an array", []string{"rows=1"},
			`call: tool "t" needs the arguments accountId, tags, undeclared: add accountId=VALUE tags:=JSON undeclared=VALUE (taskwire tools lists every input)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := parseToolArgs(schema, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			err = checkRequired("t", schema, args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkRequired: %v", err)
				}
				return
			}
			if err == nil || exitCode(err) != exitUsage {
				t.Fatalf("error %v, want a usage error", err)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseObjectSchema(t *testing.T) {
	got, err := parseObjectSchema(json.RawMessage(`{"type":"object","properties":{
		"b":{"type":"boolean","title":"B","default":true},
		"a":{"type":"string","enum":["x","y"],"description":"pick"},
		"c":{"type":"string","oneOf":[{"const":"p","title":"P"},{"const":"q"}]}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	// In the order of the schema's text.
	want := objectSchema{Fields: []schemaField{
		{Name: "b", Type: "boolean", Title: "B", Default: json.RawMessage(`true`)},
		{Name: "a", Type: "string", Description: "pick", Required: true, Enum: []string{"x", "y"}},
		{Name: "c", Type: "string", Enum: []string{"p", "q"}},
	}, Required: []string{"a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	for _, raw := range []string{``, `null`} {
		if s, err := parseObjectSchema(json.RawMessage(raw)); err != nil || len(s.Fields) != 0 || s.Closed {
			t.Errorf("schema %q: %+v, %v; want an open schema without fields", raw, s, err)
		}
	}
	if _, err := parseObjectSchema(json.RawMessage(`[1]`)); err == nil {
		t.Error("an array schema was accepted")
	}
	many := `{"properties":{`
	for i := range maxSchemaFields + 1 {
		if i > 0 {
			many += ","
		}
		many += `"f` + strings.Repeat("x", i) + `":{}`
	}
	if _, err := parseObjectSchema(json.RawMessage(many + `}}`)); err == nil {
		t.Errorf("a schema of %d properties was accepted", maxSchemaFields+1)
	}
}

func TestParseAnswers(t *testing.T) {
	got, err := parseAnswers([]string{`approval={"action":"accept","content":{"approve":true}}`, `other="x=y"`})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"approval": `{"action":"accept","content":{"approve":true}}`, "other": `"x=y"`}
	gotS := map[string]string{}
	for k, v := range got {
		gotS[k] = string(v)
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{{"approval"}, {"=1"}, {"a=1", "a=2"}, {"a={"}} {
		if _, err := parseAnswers(bad); exitCode(err) != exitUsage {
			t.Errorf("answers %q: %v, want a usage error", bad, err)
		}
	}
}

func TestParseInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantPos  []string
		wantJSON bool
		wantURL  string
	}{
		{[]string{"--json", "tool", "a=1"}, []string{"tool", "a=1"}, true, ""},
		{[]string{"tool", "a=1", "--json", "--url", "http://h/mcp", "b=2"}, []string{"tool", "a=1", "b=2"}, true, "http://h/mcp"},
		{[]string{"tool", "--", "--json", "-x=1"}, []string{"tool", "--json", "-x=1"}, false, ""},
	} {
		var cf clientFlags
		fs := newClientFlagSet("call", "usage: taskwire call", &cf)
		pos, err := parseInterleaved(fs, tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if diff := cmp.Diff(tc.wantPos, pos); diff != "" || cf.json != tc.wantJSON || cf.url != tc.wantURL {
			t.Errorf("%q: positional (-want +got):\n%s json %v url %q", tc.args, diff, cf.json, cf.url)
		}
	}
	var cf clientFlags
	fs := newClientFlagSet("call", "usage: taskwire call", &cf)
	if _, err := parseInterleaved(fs, []string{"tool", "--frobnicate"}, io.Discard); exitCode(err) != exitUsage {
		t.Errorf("unknown flag: %v, want a usage error", err)
	}
}
