package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/internal/cliflags"
)

// progressState is what the progress line shows.
type progressState struct {
	Status  string
	Message string
	// Progress and Total are the numbers of a progress notification, when
	// the server sent one (Total may be unknown).
	Progress *float64
	Total    *float64
}

// progressLine shows a waiting command's progress on stderr. On a
// terminal it is one line redrawn in place (also every second, for the
// elapsed time); otherwise it writes one line per change. Methods are safe
// for concurrent use.
type progressLine struct {
	w        io.Writer
	terminal bool
	start    time.Time
	now      func() time.Time

	mu    sync.Mutex
	state progressState
	last  string // the last text written, without the elapsed time
	open  bool   // a terminal line is drawn and not yet ended
}

func newProgressLine(w io.Writer, terminal bool, now func() time.Time) *progressLine {
	return &progressLine{w: w, terminal: terminal, start: now(), now: now}
}

// update records a new state and shows it if it changed (on a terminal,
// always: the elapsed time moves).
func (p *progressLine) update(s progressState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.Progress == nil && p.state.Status == s.Status && p.state.Message == s.Message {
		s.Progress, s.Total = p.state.Progress, p.state.Total // a task update keeps the last numbers
	}
	p.state = s
	p.draw(false)
}

// tick redraws a terminal line with the current elapsed time.
func (p *progressLine) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.open {
		p.draw(true)
	}
}

// end finishes a terminal line so that what follows starts on its own.
func (p *progressLine) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

func (p *progressLine) draw(force bool) {
	text := renderProgress(p.state)
	if !p.terminal && !force && text == p.last {
		return
	}
	p.last = text
	line := text + " " + formatElapsed(p.now().Sub(p.start))
	if p.terminal {
		fmt.Fprint(p.w, "\r\x1b[K"+line) // carriage return, then clear to the end of the line
		p.open = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// renderProgress is the progress line without the elapsed time, e.g.
// "working: row 400 of 1000 [400/1000 40%]".
func renderProgress(s progressState) string {
	var b strings.Builder
	b.WriteString(s.Status)
	if s.Message != "" {
		b.WriteString(": ")
		b.WriteString(cliflags.OneLine(s.Message, 200))
	}
	if s.Progress != nil {
		b.WriteString(" [")
		b.WriteString(formatNumber(*s.Progress))
		if s.Total != nil && *s.Total > 0 {
			fmt.Fprintf(&b, "/%s %d%%", formatNumber(*s.Total), int(100**s.Progress / *s.Total))
		}
		b.WriteString("]")
	}
	return b.String()
}

// formatElapsed renders an elapsed time to a tenth of a second: "(2.4s)".
func formatElapsed(d time.Duration) string {
	return "(" + d.Round(100*time.Millisecond).String() + ")"
}

func formatNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
