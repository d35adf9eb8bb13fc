package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReader(t *testing.T) {
	type ev struct {
		ID    string
		Data  string
		Retry time.Duration
	}
	for name, tc := range map[string]struct {
		in   string
		want []ev
		err  error
	}{
		"two events":       {in: "data: a\n\ndata: b\n\n", want: []ev{{Data: "a"}, {Data: "b"}}},
		"crlf and comment": {in: ": hi\r\nid: 7\r\ndata: x\r\n\r\n", want: []ev{{ID: "7", Data: "x"}}},
		"multi-line data":  {in: "data: a\ndata: b\n\n", want: []ev{{Data: "a\nb"}}},
		"priming":          {in: "id: e1\nretry: 500\ndata: \n\n", want: []ev{{ID: "e1", Data: "", Retry: 500 * time.Millisecond}}},
		"unterminated":     {in: "data: last", want: []ev{{Data: "last"}}},
		"no space":         {in: "data:z\n\n", want: []ev{{Data: "z"}}},
		"oversized line":   {in: "data: " + strings.Repeat("x", 100) + "\n\n", err: errEventTooLarge},
		"oversized data":   {in: strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n", err: errEventTooLarge},
		"too many events":  {in: strings.Repeat("data: a\n\n", 4), want: []ev{{Data: "a"}, {Data: "a"}, {Data: "a"}}, err: errTooManyEvents},
	} {
		t.Run(name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tc.in), 64, 3)
			var got []ev
			var err error
			for {
				var e *sseEvent
				if e, err = r.next(); err != nil {
					break
				}
				got = append(got, ev{ID: e.id, Data: string(e.data), Retry: e.retry})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			want := tc.err
			if want == nil {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Errorf("err = %v, want %v", err, want)
			}
		})
	}
}
