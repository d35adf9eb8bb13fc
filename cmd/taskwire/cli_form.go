package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/mcp"
)

// maxLineBytes bounds one line typed at a form prompt.
const maxLineBytes = 64 << 10

// maxAttempts bounds the answers a form prompt takes before it gives up.
const maxAttempts = 5

// lineReader reads stdin a line at a time on a goroutine of its own, so
// that a prompt can give up when its context ends (Ctrl-C). The goroutine
// ends at the end of the input or when a line is too long.
type lineReader struct {
	lines chan string
	stop  chan struct{} // closed by close: no more lines are wanted
	done  chan struct{} // closed when the input ended
	err   error         // why, set before done is closed
}

// newLineReader starts reading r. The goroutine ends at the end of the
// input, or after close at the next line (a read in progress cannot be
// interrupted; the process exits soon after a command closes its reader).
func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(lr.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
		for sc.Scan() {
			select {
			case lr.lines <- sc.Text():
			case <-lr.stop:
				lr.err = io.EOF
				return
			}
		}
		lr.err = sc.Err()
		if lr.err == nil {
			lr.err = io.EOF
		}
	}()
	return lr
}

// close tells the reader that no more lines are wanted.
func (lr *lineReader) close() { close(lr.stop) }

// next returns the next line, or an error at the end of the input or of ctx.
func (lr *lineReader) next(ctx context.Context) (string, error) {
	select {
	case l := <-lr.lines:
		return strings.TrimSpace(l), nil
	case <-lr.done:
		return "", fmt.Errorf("reading the answer: %w", lr.err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// formPrompter asks elicitation forms on a terminal: the message, then
// accept, decline or cancel, then one prompt per field of the form,
// typed by the form's schema, with its default.
type formPrompter struct {
	in  *lineReader
	out io.Writer
	// before runs before a form is shown (it ends the progress line).
	before func()
}

// elicit answers one elicitation/create request.
func (fp *formPrompter) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if fp.before != nil {
		fp.before()
	}
	if p.Mode == mcp.ElicitModeURL {
		return nil, errors.New("the server asks to open a URL, which this command does not do")
	}
	schema, err := parseObjectSchema(p.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("the server's form: %w", err)
	}
	fmt.Fprintf(fp.out, "\nThe server asks:\n  %s\n", strings.ReplaceAll(oneLineKeepBreaks(p.Message), "\n", "\n  "))
	action, err := fp.ask(ctx, "Answer? accept, decline or cancel [accept]: ", func(s string) (any, error) {
		switch strings.ToLower(s) {
		case "", "a", "accept", "y", "yes":
			return mcp.ElicitActionAccept, nil
		case "d", "decline", "n", "no":
			return mcp.ElicitActionDecline, nil
		case "c", "cancel":
			return mcp.ElicitActionCancel, nil
		}
		return nil, errors.New("type accept, decline or cancel")
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.ElicitResult{Action: action.(string)}
	if res.Action != mcp.ElicitActionAccept {
		return res, nil
	}
	res.Content = map[string]any{}
	for _, f := range schema.Fields {
		v, set, err := fp.askField(ctx, f)
		if err != nil {
			return nil, err
		}
		if set {
			res.Content[f.Name] = v
		}
	}
	return res, nil
}

// askField asks one field. set is false for an optional field left empty
// without a default.
func (fp *formPrompter) askField(ctx context.Context, f schemaField) (v any, set bool, err error) {
	var b strings.Builder
	label := f.Title
	if label == "" {
		label = f.Name
	}
	b.WriteString(cliflags.OneLine(label, 100))
	fmt.Fprintf(&b, " (%s", f.scalarType())
	if f.Required {
		b.WriteString(", required")
	}
	b.WriteString(")")
	if f.Description != "" {
		b.WriteString(" " + cliflags.OneLine(f.Description, 200))
	}
	if len(f.Enum) > 0 {
		b.WriteString(" one of " + cliflags.OneLine(strings.Join(f.Enum, ", "), 200))
	}
	if f.scalarType() == "boolean" {
		b.WriteString(" y/n")
	}
	var def any
	if len(f.Default) > 0 && json.Unmarshal(f.Default, &def) == nil && def != nil {
		d, _ := json.Marshal(def)
		fmt.Fprintf(&b, " [%s]", cliflags.OneLine(strings.Trim(string(d), `"`), 100))
	}
	b.WriteString(": ")
	v, err = fp.ask(ctx, b.String(), func(s string) (any, error) {
		if s == "" {
			switch {
			case def != nil:
				return def, nil
			case f.Required:
				return nil, errors.New("an answer is required")
			}
			return nil, errNoAnswer
		}
		return formValue(f, s)
	})
	if errors.Is(err, errNoAnswer) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// formValue converts a typed answer to the field's type.
func formValue(f schemaField, s string) (any, error) {
	switch typ := f.scalarType(); typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("type y or n")
	case "integer", "number":
		return convertScalar(typ, s)
	case "string":
		if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
			return nil, fmt.Errorf("type one of %s", strings.Join(f.Enum, ", "))
		}
		return s, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, errors.New("type a JSON value")
	}
	return v, nil
}

// errNoAnswer: an optional field was left empty.
var errNoAnswer = errors.New("no answer")

// ask prompts until check accepts an answer, at most maxAttempts times;
// check's errors are shown as the reason to try again, except errNoAnswer,
// which is returned.
func (fp *formPrompter) ask(ctx context.Context, prompt string, check func(string) (any, error)) (any, error) {
	for range maxAttempts {
		fmt.Fprint(fp.out, prompt)
		line, err := fp.in.next(ctx)
		if err != nil {
			fmt.Fprintln(fp.out)
			return nil, err
		}
		v, err := check(line)
		if err == nil {
			return v, nil
		}
		if errors.Is(err, errNoAnswer) {
			return nil, err
		}
		fmt.Fprintln(fp.out, "  "+err.Error())
	}
	return nil, errors.New("no valid answer")
}

// oneLineKeepBreaks is oneLine for a multi-line message: line breaks stay.
func oneLineKeepBreaks(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 20 {
		lines = append(lines[:20], "…")
	}
	for i, l := range lines {
		lines[i] = cliflags.OneLine(l, 500)
	}
	return strings.Join(lines, "\n")
}
