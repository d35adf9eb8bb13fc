package task

import "strings"

// TraceContext is the W3C trace context (https://www.w3.org/TR/trace-context/)
// of the request that created a task: the traceparent of the span that
// handled the request and, optionally, its tracestate. A durable store keeps
// it with the task, beside the origin and never inside it, so that every
// later run of the task's job can link to the creating span, in any process.
//
// The zero value is "no trace context". Stores keep only a valid context of
// at most MaxTraceContext encoded bytes (see Encode); anything else is not
// stored, which is never an error: tracing is best effort.
type TraceContext struct {
	// Traceparent is the W3C traceparent of version 00:
	// "00-<32 hex trace ID>-<16 hex parent ID>-<2 hex flags>", in lower
	// case, with neither ID all zeros.
	Traceparent string
	// Tracestate is the W3C tracestate list that goes with Traceparent, or
	// empty.
	Tracestate string
}

// MaxTraceContext bounds the encoded bytes of a stored TraceContext. A
// context whose tracestate would exceed it is kept without the tracestate.
const MaxTraceContext = 512

// maxTracestateMembers is the W3C limit of tracestate list members.
const maxTracestateMembers = 32

// Encode returns the form stores keep: the traceparent, followed by a
// space and the tracestate when there is one. It returns "" when the
// traceparent is not valid, and drops a tracestate that is not valid or
// would make the encoding longer than MaxTraceContext.
func (tc TraceContext) Encode() string {
	if !validTraceparent(tc.Traceparent) {
		return ""
	}
	if tc.Tracestate == "" || len(tc.Traceparent)+1+len(tc.Tracestate) > MaxTraceContext || !validTracestate(tc.Tracestate) {
		return tc.Traceparent
	}
	return tc.Traceparent + " " + tc.Tracestate
}

// DecodeTraceContext reads what Encode returned. Anything that Encode
// would not have produced decodes to the zero TraceContext, so a damaged or
// hand-edited value is ignored rather than propagated.
func DecodeTraceContext(s string) TraceContext {
	if len(s) > MaxTraceContext {
		return TraceContext{}
	}
	parent, state, _ := strings.Cut(s, " ")
	tc := TraceContext{Traceparent: parent, Tracestate: state}
	if tc.Encode() != s {
		return TraceContext{}
	}
	return tc
}

// validTraceparent accepts a version-00 traceparent, the only version this
// package writes.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] != "00" {
		return false
	}
	return lowerHex(s[3:35]) && lowerHex(s[36:52]) && lowerHex(s[53:55]) &&
		strings.Trim(s[3:35], "0") != "" && strings.Trim(s[36:52], "0") != ""
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validTracestate accepts a list of at most 32 key=value members separated
// by commas with optional spaces or tabs, keys of lower-case letters,
// digits and _-*/@, values of printable ASCII without ',' and '=' that do
// not end in a space.
func validTracestate(s string) bool {
	members := strings.Split(s, ",")
	if len(members) > maxTracestateMembers {
		return false
	}
	for _, m := range members {
		m = strings.Trim(m, " \t")
		key, value, ok := strings.Cut(m, "=")
		if !ok || key == "" || value == "" || len(key) > 256 || len(value) > 256 || value[len(value)-1] == ' ' {
			return false
		}
		for i := 0; i < len(key); i++ {
			c := key[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && !strings.ContainsRune("_-*/@", rune(c)) {
				return false
			}
		}
		for i := 0; i < len(value); i++ {
			if c := value[i]; c < 0x20 || c > 0x7e || c == ',' || c == '=' {
				return false
			}
		}
	}
	return true
}
