#!/usr/bin/env bash
# make test: vet and test (with the race detector) the main module, then the
# interop module, then the stdiotest module. A suite that fails does not stop
# the others: at the end the script names the suites that failed, says which
# tests were skipped because PostgreSQL or Chromium was missing (outside
# CI=true; under it those tests fail instead), and exits non-zero if any
# suite failed.
#
# Environment: GO (default go), PKGS (the main module's packages, default
# ./...), TASKWIRE_TEST_POSTGRES_URL (see README.md, Development).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PKGS=${PKGS:-./...}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$GO" build -o "$tmp/testreport" ./internal/testreport; then
  echo "test: cannot build internal/testreport" >&2
  exit 1
fi

failed=()
# suite NAME DIR PACKAGES...: go vet, then go test -race, in DIR.
suite() {
  local name=$1 dir=$2
  shift 2
  echo "=== $name: go vet"
  if ! (cd "$dir" && "$GO" vet "$@"); then
    failed+=("$name (go vet)")
  fi
  echo "=== $name: go test -race"
  (cd "$dir" && "$GO" test -json -race -count=1 "$@") 2>&1 |
    "$tmp/testreport" -suite "$name" -summary "$tmp/skipped"
  local st=("${PIPESTATUS[@]}")
  if [ "${st[0]}" -ne 0 ] || [ "${st[1]}" -ne 0 ]; then
    failed+=("$name (go test)")
  fi
}

# shellcheck disable=SC2086 # PKGS is a list of patterns
suite main . $PKGS
suite interop interop ./...
suite stdiotest stdiotest ./...

echo "=== summary"
if [ -s "$tmp/skipped" ]; then
  cat "$tmp/skipped"
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "ok: main, interop and stdiotest passed"
