package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/mcp"
)

// toolsCmd runs `taskwire tools [--json]`: the server's tools with their
// input fields.
func toolsCmd(ctx context.Context, args []string, env *cliEnv) error {
	var cf clientFlags
	fs := newClientFlagSet("tools", "usage: taskwire tools [flags]\n\n"+
		"Lists the server's tools, each with its description and a table of its inputs.", &cf)
	pos, err := parseInterleaved(fs, args, env.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("tools: unexpected arguments %q", pos)
	}
	ctx, s, stop, err := cf.openBounded(ctx, env)
	if err != nil {
		return err
	}
	defer stop()
	tools, err := s.c.ListTools(ctx)
	if err != nil {
		return s.fail(err)
	}
	if cf.json {
		return printJSON(env.stdout, tools)
	}
	return printTools(env.stdout, tools)
}

// printTools writes each tool, its description and a table of its inputs.
func printTools(w io.Writer, tools []*mcp.Tool) error {
	for i, t := range tools {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, cliflags.OneLine(t.Name, 200))
		if d := t.Description; d != "" {
			fmt.Fprintln(w, "  "+cliflags.OneLine(d, 1000))
		}
		schema, err := parseObjectSchema(t.InputSchema)
		if err != nil {
			fmt.Fprintf(w, "  (input schema unreadable: %v)\n", err)
			continue
		}
		if len(schema.Fields) == 0 {
			fmt.Fprintln(w, "  no inputs")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range schema.Fields {
			req := ""
			if f.Required {
				req = "required"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", cliflags.OneLine(f.Name, 100), cliflags.OneLine(f.Type, 50), req, cliflags.OneLine(f.Description, 300))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// printResult writes a tool result: the text of its content blocks (the
// structured content when there is no text), or the whole result as JSON.
// A result with isError true is errToolError, after it is printed.
func printResult(w io.Writer, res *mcp.CallToolResult, asJSON bool) error {
	if res == nil {
		return fmt.Errorf("the server sent no result")
	}
	var err error
	if asJSON {
		err = printJSON(w, res)
	} else {
		err = printContent(w, res)
	}
	if err != nil {
		return err
	}
	if res.IsError {
		return errToolError
	}
	return nil
}

func printContent(w io.Writer, res *mcp.CallToolResult) error {
	texts := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts++
			fmt.Fprint(w, c.Text)
			if !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(w)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes; --json shows it]\n", cliflags.OneLine(c.MIMEType, 100), len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes; --json shows it]\n", cliflags.OneLine(c.MIMEType, 100), len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource %s]\n", cliflags.OneLine(c.URI, 1000))
		default:
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, string(b))
		}
	}
	if texts == 0 && len(res.StructuredContent) > 0 {
		return printJSON(w, res.StructuredContent)
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// answerHint explains how to give a task the input the command could not
// ask for: the `taskwire task answer` command with an example answer for
// every pending key, and what each request asks.
func answerHint(s *clientSession, need *client.InputRequiredError) string {
	var b strings.Builder
	if need.TaskID == "" {
		b.WriteString("taskwire: the server asks for input before it answers, and stdin is not a terminal; " +
			"run the command on a terminal to answer. It asks for:\n")
		writeRequests(&b, need)
		return b.String()
	}
	fmt.Fprintf(&b, "taskwire: task %s needs input, and stdin is not a terminal. The task waits; answer it%s with\n  taskwire task answer",
		quoteID(need.TaskID), s.credentialsNote())
	if s.url != defaultURL {
		b.WriteString(" --url " + shellQuote(s.url))
	}
	b.WriteString(" " + quoteID(need.TaskID))
	for _, k := range need.Keys {
		b.WriteString(" " + shellQuote(k+"="+exampleAnswer(need.Requests[k])))
	}
	fmt.Fprintf(&b, "\nthen wait for the result with\n  %s\nIt asks for:\n", s.resumeCommand(need.TaskID))
	writeRequests(&b, need)
	return b.String()
}

// writeRequests describes each pending input request.
func writeRequests(b *strings.Builder, need *client.InputRequiredError) {
	for _, k := range need.Keys {
		r := need.Requests[k]
		if r == nil {
			continue
		}
		fmt.Fprintf(b, "  %s: %s", cliflags.OneLine(k, 100), cliflags.OneLine(r.Method, 100))
		if r.Method != mcp.MethodElicitationCreate {
			fmt.Fprintf(b, " (answer with the JSON result of %s)\n", cliflags.OneLine(r.Method, 100))
			continue
		}
		var p mcp.ElicitParams
		if json.Unmarshal(r.Params, &p) != nil {
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(b, " %q\n", cliflags.OneLine(p.Message, 300))
		schema, err := parseObjectSchema(p.RequestedSchema)
		if err != nil {
			continue
		}
		for _, f := range schema.Fields {
			b.WriteString("    " + formFieldLine(f) + "\n")
		}
	}
	b.WriteString(`An elicitation answer is {"action":"accept","content":{...}}, {"action":"decline"} or {"action":"cancel"}.` + "\n")
}

// formFieldLine describes a form's field for an answer typed by hand: its
// name (the key of the answer's content), type, whether it is required,
// and its title and description, each when the form gives one.
func formFieldLine(f schemaField) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", cliflags.OneLine(f.Name, 100), cliflags.OneLine(f.Type, 50))
	if f.Required {
		b.WriteString(", required")
	}
	b.WriteString(")")
	switch title, desc := cliflags.OneLine(f.Title, 100), cliflags.OneLine(f.Description, 300); {
	case title != "" && desc != "":
		b.WriteString(" " + title + ": " + desc)
	case title != "":
		b.WriteString(" " + title)
	case desc != "":
		b.WriteString(" " + desc)
	}
	return b.String()
}

// exampleAnswer is an accepted answer to r with a placeholder for every
// field of its form: the default, the first choice, or a value of the
// field's type.
func exampleAnswer(r *mcp.InputRequest) string {
	if r == nil || r.Method != mcp.MethodElicitationCreate {
		return "{}"
	}
	var p mcp.ElicitParams
	if json.Unmarshal(r.Params, &p) != nil {
		return "{}"
	}
	schema, _ := parseObjectSchema(p.RequestedSchema)
	content := map[string]any{}
	for _, f := range schema.Fields {
		var def any
		if len(f.Default) > 0 && json.Unmarshal(f.Default, &def) == nil && def != nil {
			content[f.Name] = def
			continue
		}
		switch typ := f.scalarType(); {
		case len(f.Enum) > 0:
			content[f.Name] = f.Enum[0]
		case typ == "boolean":
			content[f.Name] = true
		case typ == "integer" || typ == "number":
			content[f.Name] = 0
		case typ == "string":
			content[f.Name] = "..."
		default:
			content[f.Name] = nil
		}
	}
	b, _ := json.Marshal(mcp.ElicitResult{Action: mcp.ElicitActionAccept, Content: content})
	return string(b)
}
