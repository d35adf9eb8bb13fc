package schemacheck

// Set validates documents against the definitions of one schema document
// that a test supplies, such as a copy of an older revision's schema kept in
// the test's own testdata. It is safe for concurrent use.
type Set struct{ s *schemaSet }

// NewSet returns a Set for the JSON Schema (Draft 2020-12) document src,
// registered under url (used only to resolve its references). The document is
// parsed on first use; errors are reported by Validate.
func NewSet(url string, src []byte) *Set {
	return &Set{s: &schemaSet{url: url, src: src}}
}

// Validate reports whether doc is valid against #/$defs/<def> of the set's
// document, like Validate for the core schema.
func (s *Set) Validate(def string, doc []byte) error { return s.s.validate(def, doc) }
