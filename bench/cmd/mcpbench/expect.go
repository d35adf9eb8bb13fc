package main

// expectation is what every response to a target's benchmark request must
// show: the whole response before load (Check), and substrings of every
// 2xx body under load (checked in wrk's Lua response hook).
type expectation struct {
	// What describes a good response, for reports ("successful tools/call
	// result").
	What string
	// Check validates one complete HTTP response.
	Check func(status int, contentType string, body []byte) error
	// Contains are substrings every 2xx body under load must contain; a body
	// that also contains `"error":` or `"isError":true` counts as bad.
	Contains []string
}

// toolsCallExpectation is the expectation of the tools-call scenario: the
// successful test_simple_text result.
func toolsCallExpectation() expectation {
	return expectation{
		What:     "successful tools/call result",
		Check:    checkToolsCallResponse,
		Contains: []string{expectedText},
	}
}

// orDefault returns e, or the tools-call expectation when e is the zero
// value.
func (e expectation) orDefault() expectation {
	if e.Check == nil {
		return toolsCallExpectation()
	}
	return e
}
