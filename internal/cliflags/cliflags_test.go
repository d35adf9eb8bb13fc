package cliflags

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\rb\x1b[2Jc\nd", 100, "a b [2Jc d"},
		{"abcdef", 3, "abc…"},
		{"abc", 3, "abc"},
		{"é\u0085x", 10, "é x"},
	} {
		if got := OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	usage := func(format string, args ...any) error { return fmt.Errorf("usage: "+format, args...) }
	fs := New("cmd", "usage: cmd [flags]")
	fs.Bool("v", false, "verbose")
	var out bytes.Buffer
	if err := Parse(fs, []string{"-h"}, &out, usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if want := "usage: cmd [flags]\n\nFlags:\n  -v\tverbose\n"; out.String() != want {
		t.Errorf("help %q, want %q", out.String(), want)
	}
	err := Parse(New("cmd", "s"), []string{"-x"}, &out, usage)
	if err == nil || err.Error() != "usage: cmd: flag provided but not defined: -x" {
		t.Errorf("-x: %v", err)
	}
	out.Reset()
	if err := Parse(New("bare", "usage: bare"), []string{"-h"}, &out, usage); !errors.Is(err, flag.ErrHelp) || out.String() != "usage: bare\n" {
		t.Errorf("help without flags %q (%v)", out.String(), err)
	}
}
