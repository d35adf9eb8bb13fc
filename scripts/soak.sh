#!/usr/bin/env bash
# Soak of a real `taskwire serve` process under the attacks of a hostile
# network (idle 10 MiB announcements, bodies trickled at 1 byte/s past the
# descriptor limit, a task-creation flood, a listen-stream hog), on loopback
# only and bounded in time (see bench/cmd/soak). Extra arguments go to the
# soak, for example
#   scripts/soak.sh -duration 30s -trickle 500
set -euo pipefail
cd "$(dirname "$0")/../bench"
exec go run ./cmd/soak "$@"
