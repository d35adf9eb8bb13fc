// Package layout holds tests that keep the module's shape readable as a
// whole: no library function longer than [MaxFuncLines], and the package
// table of docs/architecture.md in step with the packages that exist.
//
// It has no API beyond the limit; everything else is in its tests, which
// read the module's sources from the directory two levels up.
package layout

// MaxFuncLines is the longest a library function may be, counted from
// its func keyword to its closing brace. Library code is every package of
// the main module except commands (cmd/), internal/
// packages, test files and test suites (packages whose name ends in
// "test"), the conformance fixtures, benchmarks and examples.
const MaxFuncLines = 100
