package main

import (
	"errors"
	"fmt"
	"strings"
)

// splitWords splits a command line into words as a POSIX shell splits a
// simple command, without running a shell and without any expansion:
// blanks (space, tab, newline) separate words; a backslash outside quotes
// takes the next character literally (a backslash-newline is removed);
// single quotes keep everything up to the next single quote; double quotes
// keep everything up to the next unescaped double quote, where a backslash
// escapes only $, `, ", \ and newline. $, `, ~, * and the like are
// ordinary characters. What a shell would read as syntax rather than a
// word (unquoted |, &, ;, <, >, (, ) or a # starting a word), an
// unterminated quote and a trailing backslash are refused, since the
// gateway runs no shell to give them their meaning.
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool // a word has started (even an empty quoted one)
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inW {
				words, inW = append(words, cur.String()), false
				cur.Reset()
			}
		case ch == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a trailing backslash escapes nothing")
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inW = true
			}
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("an unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i, inW = i+1+end, true
		case ch == '"':
			j, err := doubleQuoted(s, i+1, &cur)
			if err != nil {
				return nil, err
			}
			i, inW = j, true
		case strings.IndexByte("|&;<>()", ch) >= 0 || ch == '#' && !inW:
			return nil, fmt.Errorf("%q is shell syntax, and no shell runs the command: quote it, or run a shell explicitly (sh -c '...')", ch)
		default:
			cur.WriteByte(ch)
			inW = true
		}
	}
	if inW {
		words = append(words, cur.String())
	}
	return words, nil
}

// doubleQuoted copies the inside of a double-quoted string starting at
// s[i] into cur and returns the index of its closing quote.
func doubleQuoted(s string, i int, cur *strings.Builder) (int, error) {
	for ; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"':
			return i, nil
		case ch == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
		default:
			cur.WriteByte(ch)
		}
	}
	return 0, errors.New("an unterminated double quote")
}
