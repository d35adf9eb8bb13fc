#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 30s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-30s}"
status=0
while IFS= read -r pkg; do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $target ($fuzztime)"
    if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"; then
      status=1
    fi
  done
done < <(go list ./...)
exit $status
