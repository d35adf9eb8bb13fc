package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	id       string
	hasID    bool
	data     []byte
	retry    time.Duration
	hasRetry bool
}

// sseReader parses a text/event-stream body with bounds: one line or one
// event's data may not exceed max bytes, and at most maxEvents events are
// read. Comments (keep-alives) are skipped; they count against nothing but
// the caller's context.
type sseReader struct {
	br        *bufio.Reader
	max       int64
	maxEvents int
	events    int
}

func newSSEReader(r io.Reader, max int64, maxEvents int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), max: max, maxEvents: maxEvents}
}

var errEventTooLarge = errors.New("sse event too large")

// readLine returns one line without its terminator (LF or CRLF).
func (r *sseReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > r.max+2 {
			return nil, errEventTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = line[:len(line)-1]
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		default:
			return nil, err
		}
	}
}

// next returns the next event, io.EOF at the end of the stream.
func (r *sseReader) next() (*sseEvent, error) {
	ev := &sseEvent{}
	var data []byte
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (hasData || ev.hasID) {
				break // an unterminated last event still counts
			}
			return nil, err
		}
		if len(line) == 0 {
			if !hasData && !ev.hasID && !ev.hasRetry {
				continue
			}
			break
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if int64(len(data)+len(value)) > r.max {
				return nil, errEventTooLarge
			}
			data = append(data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.id, ev.hasID = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				ev.retry, ev.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	r.events++
	if r.events > r.maxEvents {
		return nil, errTooManyEvents
	}
	ev.data = data
	return ev, nil
}

var errTooManyEvents = errors.New("too many sse events")
