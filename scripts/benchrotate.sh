#!/usr/bin/env bash
# benchrotate.sh runs the variants of a benchmark, each in a process of its
# own, in rounds whose order rotates: round r starts with variant r mod N.
# Running variants one after the other in a single process makes the later
# ones pay for the garbage and goroutines of the earlier ones; rotating
# spreads what the machine does meanwhile over every variant.
#
# Usage: benchrotate.sh TESTBINARY ROUNDS PREFIX BENCHTIME VARIANT...
# Each run is TESTBINARY -test.bench "PREFIXops=VARIANT$"; the benchmark
# lines go to standard output, for benchstat -col /ops. Example:
#
#   go test -c -o ops.test ./tracing
#   bash scripts/benchrotate.sh ./ops.test 16 'ToolsCallOps/mode=http/' 1500ms off metrics tracing both > http.txt
set -euo pipefail
if [ "$#" -lt 5 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
bin=$1 rounds=$2 prefix=$3 benchtime=$4
shift 4
variants=("$@")
n=${#variants[@]}
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < n; k++)); do
    v=${variants[$(((r + k) % n))]}
    "$bin" -test.run '^$' -test.bench "${prefix}ops=${v}\$" -test.benchtime "$benchtime" | grep '^Benchmark'
  done
done
