// Package cliflags holds the command-line conventions that the taskwire
// command and node/nodecmd share: a command's flag set, whose help is its
// synopsis and then its flags, parsing that prints nothing but the help,
// and text made safe for one terminal line.
package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// New returns the flag set of a command, whose help (-h) is the synopsis,
// then the flags, if it has any. It prints nothing while it parses: parse
// it with Parse.
func New(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// Parse parses args into fs, a flag set of New. -h (or -help) prints the
// command's help to stdout and returns flag.ErrHelp; any other mistake is
// the error usage makes of "NAME: what is wrong". Positional arguments are
// left to the caller (fs.Args).
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer, usage func(format string, args ...any) error) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return err
	case err != nil:
		return usage("%s: %v", fs.Name(), err)
	}
	return nil
}

// OneLine makes a text (a server's, or a user's argument) safe for one
// terminal line: control characters become spaces, and it is cut at max
// runes, marked with "…".
func OneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
