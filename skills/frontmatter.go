package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Front-matter bounds of the Agent Skills specification.
const (
	maxNameLen        = 64
	maxDescriptionLen = 1024
	// maxFrontmatterBytes bounds the YAML block parsed; a larger one is an
	// error rather than memory spent.
	maxFrontmatterBytes = 64 << 10
)

// namePattern is the Agent Skills naming rule: lowercase letters, digits
// and single hyphens, neither first nor last.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidName reports whether name satisfies the Agent Skills naming rules
// (1 to 64 characters of lowercase letters, digits and hyphens, without a
// leading, trailing or doubled hyphen).
func ValidName(name string) bool {
	return len(name) <= maxNameLen && namePattern.MatchString(name)
}

// Frontmatter is a SKILL.md front matter parsed: its name and description
// and the whole of it as a JSON object.
type Frontmatter struct {
	Name        string
	Description string
	// JSON is every field as a JSON object (keys sorted).
	JSON json.RawMessage
}

// ParseFrontmatter reads the YAML front matter that opens a SKILL.md (a
// "---" line, the YAML, a "---" line; a byte-order mark and CRLF line ends
// are accepted) and checks that it is a mapping with a non-empty string
// name and description within the Agent Skills bounds. It does not check
// the name against a path (see the loaders).
func ParseFrontmatter(md []byte) (*Frontmatter, error) {
	block, err := frontmatterBlock(md)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := yaml.Unmarshal(block, &doc); err != nil {
		return nil, fmt.Errorf("front matter is not YAML: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("front matter is not a YAML mapping")
	}
	v, err := jsonValue(obj)
	if err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	fm := &Frontmatter{JSON: raw}
	var errs []error
	fm.Name, _ = obj["name"].(string)
	fm.Description, _ = obj["description"].(string)
	switch {
	case fm.Name == "":
		errs = append(errs, errors.New("front matter has no name (a non-empty string)"))
	case !ValidName(fm.Name):
		errs = append(errs, fmt.Errorf("front matter name %q breaks the naming rules (1-64 of a-z, 0-9 and single inner hyphens)", fm.Name))
	}
	switch {
	case fm.Description == "":
		errs = append(errs, errors.New("front matter has no description (a non-empty string)"))
	case utf8.RuneCountInString(fm.Description) > maxDescriptionLen:
		errs = append(errs, fmt.Errorf("front matter description is longer than %d characters", maxDescriptionLen))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return fm, nil
}

// frontmatterBlock returns the YAML between the opening and closing "---"
// lines.
func frontmatterBlock(md []byte) ([]byte, error) {
	md = bytes.TrimPrefix(md, []byte("\uFEFF"))
	rest, ok := cutLine(md, "---")
	if !ok {
		return nil, errors.New("SKILL.md does not begin with a --- front matter line")
	}
	for off := 0; off < len(rest) && off <= maxFrontmatterBytes; {
		end := bytes.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if t := bytes.TrimRight(line, " \t\r"); string(t) == "---" {
			return rest[:off], nil
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return nil, fmt.Errorf("SKILL.md front matter has no closing --- line within %d bytes", maxFrontmatterBytes)
}

// cutLine removes a first line equal to want (ignoring a trailing CR and
// blanks).
func cutLine(b []byte, want string) ([]byte, bool) {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return nil, false
	}
	if string(bytes.TrimRight(b[:end], " \t\r")) != want {
		return nil, false
	}
	return b[end+1:], true
}

// jsonValue converts a decoded YAML value into one JSON encodes the same
// way on every side: objects with string keys, finite numbers.
func jsonValue(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		return nil, errors.New("a mapping has a key that is not a string")
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, errors.New("a number is not finite")
		}
		return t, nil
	case nil, string, bool, int, int64, uint64:
		return t, nil
	}
	return nil, fmt.Errorf("a value of type %T has no JSON form", v)
}

// SameFrontmatter reports whether two JSON front matter objects have the
// same content: the same fields with equal values, numbers compared as
// numbers and key order ignored.
func SameFrontmatter(a, b json.RawMessage) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || x == nil || y == nil {
		return false
	}
	return jsonEqual(x, y)
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}
