package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time.convert must work on machines without zoneinfo
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// demoEndpoint is the endpoint `taskwire serve` offers: small, genuinely
// useful inline tools that show typed input and structured output. It
// serves Tasks for 2026-07-28; durableTools adds the task tools, and the
// server needs a task manager.
func demoEndpoint() *server.Endpoint {
	ep := server.NewEndpoint(server.EndpointOptions{
		Path:    "/mcp",
		Name:    "taskwire-demo",
		Title:   "taskwire demo",
		Version: version,
		Instructions: "Demo tools: text statistics, SHA-256 digests and time-zone conversion answer at once; " +
			"reports.generate and approvals.request run as durable tasks (declare the Tasks extension).",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTool(ep, &mcp.Tool{
		Name:        "text.stats",
		Description: "Count the characters, words and lines of a text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(true)},
	}, textStats)
	server.AddTool(ep, &mcp.Tool{
		Name:        "hash.sha256",
		Description: "Return the SHA-256 digest of a text, in hexadecimal.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(true)},
	}, hashSHA256)
	server.AddTool(ep, &mcp.Tool{
		Name:        "time.convert",
		Description: "Convert an RFC 3339 time (or now, when omitted) to an IANA time zone.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ptr(true)},
	}, timeConvert)
	return ep
}

func ptr[T any](v T) *T { return &v }

// TextStatsInput is the input of text.stats.
type TextStatsInput struct {
	Text string `json:"text" jsonschema:"the text to measure"`
}

// TextStatsOutput is the output of text.stats.
type TextStatsOutput struct {
	Characters int `json:"characters" jsonschema:"Unicode code points"`
	Bytes      int `json:"bytes" jsonschema:"UTF-8 bytes"`
	Words      int `json:"words" jsonschema:"runs of non-space characters"`
	Lines      int `json:"lines" jsonschema:"lines, counting a final line without a newline"`
}

func textStats(_ context.Context, _ *server.Request, in TextStatsInput) (*mcp.CallToolResult, TextStatsOutput, error) {
	out := TextStatsOutput{
		Characters: utf8.RuneCountInString(in.Text),
		Bytes:      len(in.Text),
		Words:      len(strings.Fields(in.Text)),
	}
	if in.Text != "" {
		out.Lines = strings.Count(in.Text, "\n")
		if !strings.HasSuffix(in.Text, "\n") {
			out.Lines++
		}
	}
	return nil, out, nil
}

// HashInput is the input of hash.sha256.
type HashInput struct {
	Text string `json:"text" jsonschema:"the text to digest, as UTF-8"`
}

// HashOutput is the output of hash.sha256.
type HashOutput struct {
	SHA256 string `json:"sha256" jsonschema:"lower-case hexadecimal digest"`
}

func hashSHA256(_ context.Context, _ *server.Request, in HashInput) (*mcp.CallToolResult, HashOutput, error) {
	sum := sha256.Sum256([]byte(in.Text))
	return nil, HashOutput{SHA256: hex.EncodeToString(sum[:])}, nil
}

// TimeConvertInput is the input of time.convert.
type TimeConvertInput struct {
	Time     string `json:"time,omitempty" jsonschema:"an RFC 3339 time; now when omitted"`
	TimeZone string `json:"timeZone" jsonschema:"an IANA time zone such as Europe/Paris"`
}

// TimeConvertOutput is the output of time.convert.
type TimeConvertOutput struct {
	Time     string `json:"time" jsonschema:"the converted time, RFC 3339"`
	TimeZone string `json:"timeZone"`
	Offset   string `json:"offset" jsonschema:"UTC offset such as +02:00"`
}

func timeConvert(_ context.Context, _ *server.Request, in TimeConvertInput) (*mcp.CallToolResult, TimeConvertOutput, error) {
	loc, err := time.LoadLocation(in.TimeZone)
	if err != nil || in.TimeZone == "" {
		return nil, TimeConvertOutput{}, fmt.Errorf("unknown time zone %q", in.TimeZone)
	}
	t := time.Now()
	if in.Time != "" {
		if t, err = time.Parse(time.RFC3339, in.Time); err != nil {
			return nil, TimeConvertOutput{}, fmt.Errorf("time must be RFC 3339, such as 2026-07-28T10:00:00Z")
		}
	}
	lt := t.In(loc)
	return nil, TimeConvertOutput{
		Time:     lt.Format(time.RFC3339),
		TimeZone: in.TimeZone,
		Offset:   lt.Format("-07:00"),
	}, nil
}
