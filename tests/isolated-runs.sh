#!/usr/bin/env bash
# Runs every test class alone, in a JVM of its own, N times (default 20), and reports the classes
# that failed in any run: flaky tests show up here, where one run of the suite may pass.
#
#   tests/isolated-runs.sh [-n RUNS] [--work DIR] [maven args...]
#
# Each run is one `./lmcache4j test` with surefire's reuseForks=false: a fresh JVM per test class,
# nothing else in it, one at a time (forkCount 1). Maven arguments narrow the set, for example
#   tests/isolated-runs.sh -n 20 -pl engine,tests -am -Dtest='RemoteTier*,Soak*' -Dsurefire.failIfNoSpecifiedTests=false
# The runs use a snapshot of the committed tree (git archive HEAD) under --work (default: a new
# directory in ${TMPDIR:-/tmp}), so the worktree stays free for editing and building meanwhile.
# Every run's surefire reports are kept there (run-K/<module>/); the summary goes to stdout and to
# summary.txt. Exit status 0 when every class passed every run, 1 otherwise.
set -euo pipefail

RUNS=20
WORK=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) RUNS="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "isolated-runs: -n needs a positive whole number, got '$RUNS'" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/lmcache4j-isolated-runs.XXXXXX")}"
SRC="$WORK/src"
mkdir -p "$SRC"
git -C "$ROOT" archive HEAD | tar -x -C "$SRC"
echo "isolated-runs: $RUNS runs of $(git -C "$ROOT" rev-parse --short HEAD) in $WORK, maven args: ${*:-(none)}"

# One line per class and run: "<run> <class> <pass|fail> [failed tests]".
OUTCOMES="$WORK/outcomes.txt"
: > "$OUTCOMES"

suite_attribute() { # $1 = report, $2 = attribute of its <testsuite> element
  grep -m1 -o "<testsuite [^>]*" "$1" | grep -o " $2=\"[0-9]*\"" | grep -o "[0-9]*"
}

failed_tests() { # $1 = report: the names of its tests that failed or erred, comma-separated
  awk '/<testcase /{ match($0, / name="[^"]*"/); name = substr($0, RSTART + 7, RLENGTH - 8) }
       /<(failure|error)[ >]/{ if (!(name in seen)) { seen[name]; out = out (out == "" ? "" : ",") name } }
       END { print out }' "$1"
}

record_run() { # $1 = run number: files each class's outcome from the run's surefire reports
  local run="$1" dir="$WORK/run-$1" report cls failed
  mkdir -p "$dir"
  for report in "$SRC"/*/target/surefire-reports/TEST-*.xml; do
    [[ -e "$report" ]] || continue
    local module; module="$(basename "$(dirname "$(dirname "$(dirname "$report")")")")"
    mkdir -p "$dir/$module"
    cp "$report" "$dir/$module/"
    cls="$(basename "$report" .xml)"; cls="${cls#TEST-}"
    failed="$(suite_attribute "$report" failures) $(suite_attribute "$report" errors)"
    if [[ "$failed" == "0 0" ]]; then
      echo "$run $cls pass" >> "$OUTCOMES"
    else
      echo "$run $cls fail $(failed_tests "$report")" >> "$OUTCOMES"
      cp "$(dirname "$report")/$cls-output.txt" "$dir/$module/" 2>/dev/null || true
    fi
  done
}

session=""
stop_session() { [[ -z "$session" ]] || kill -KILL -- "-$session" 2>/dev/null || true; }
trap 'stop_session; exit 130' INT TERM

for run in $(seq 1 "$RUNS"); do
  rm -rf "$SRC"/*/target/surefire-reports
  started=$SECONDS
  rc=0
  # Test failures must not stop the reactor: every class of every module runs in every run. The run
  # gets a session of its own, killed when it ends, so nothing of it outlives it (a Maven whose launcher
  # was killed from outside went on writing into the snapshot beside the next run).
  (cd "$SRC" && exec setsid ./lmcache4j test -DreuseForks=false -DforkCount=1 -Dmaven.test.failure.ignore=true -fae "$@") \
    > "$WORK/run-$run.log" 2>&1 &
  session=$!
  wait "$session" || rc=$?
  stop_session
  session=""
  record_run "$run"
  # Test failures leave Maven's exit at 0 here: anything else (no compile, a module whose tests could
  # not even be listed, a killed run) hides classes, so it fails the loop too.
  [[ "$rc" -eq 0 ]] || echo "$run" >> "$WORK/maven-failures.txt"
  echo "isolated-runs: run $run/$RUNS: maven exit $rc, $(grep -c "^$run [^ ]* fail" "$OUTCOMES" || true) failing classes," \
       "$(grep -c "^$run " "$OUTCOMES" || true) classes, $((SECONDS - started)) s"
done

# A class with fewer reports than runs crashed its JVM or was not reached in some run: count those as failures.
summary() {
  awk -v runs="$RUNS" '
    { seen[$2]++; if ($3 == "fail") { failed[$2]++; if ($4 != "") tests[$2] = tests[$2] " " $1 ":" $4 } }
    END {
      bad = 0
      for (c in seen) {
        f = failed[c] + (runs - seen[c])
        if (f > 0) { printf "FLAKY  %-70s failed %d of %d runs (run:tests%s)\n", c, f, runs, tests[c]; bad++ }
      }
      printf "isolated-runs: %d classes x %d runs, %d classes failed at least once\n", length(seen), runs, bad
      exit bad > 0
    }' "$OUTCOMES"
}
status=0
summary | sort | tee "$WORK/summary.txt" || status=1
grep -q " 0 classes failed" "$WORK/summary.txt" || status=1
if [[ -s "$WORK/maven-failures.txt" ]]; then
  echo "isolated-runs: Maven itself failed in run(s) $(paste -sd, "$WORK/maven-failures.txt"): see run-N.log" \
    | tee -a "$WORK/summary.txt"
  status=1
fi
echo "isolated-runs: reports and logs in $WORK"
exit "$status"
