#!/usr/bin/env bash
# Loopback HTTP benchmark of an inline tools/call: taskwire against the
# official go-sdk and a bare net/http handler, in one run (see
# bench/README.md). Extra arguments go to the harness, for example
#   scripts/bench.sh -rounds 3 -duration 5s -check-goals
set -euo pipefail
if ! command -v wrk >/dev/null 2>&1; then
  echo "bench: installing wrk (Debian package)" >&2
  apt-get update -qq && apt-get install -y -qq wrk
fi
cd "$(dirname "$0")/../bench"
exec go run ./cmd/mcpbench "$@"
