#!/usr/bin/env bash
# make soak N=3: make test's last step (the integration tier, molecule and the two end-to-end passes,
# side by side) N times in a row, then each test's runs, passes, failures and durations, for finding
# tests that fail now and then. Not part of make test. The e2e tier runs twice a round (both
# ansible-cores), so its tests count two runs a round.
# LOADED=1 (make soak LOADED=1): under load, as a busy CI machine is: a CPU hog on one of the two
# cores and a writer that fsyncs 64 MiB over and over, both started here, bounded by the soak's
# rounds (two hours each at most), and stopped by their PIDs when it ends. A loaded pass takes
# longer than go test's 60-minute guard against a hung test allows (make's E2E_TIMEOUT): 120
# minutes here, unless E2E_TIMEOUT is given.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
rounds="${1:-3}"
logs="$(mktemp -d /tmp/k3sf-soak-XXXXXX)"
failed_rounds=0
load_pids=()
stop_load() { [ "${#load_pids[@]}" -eq 0 ] || kill "${load_pids[@]}" 2>/dev/null || true; }
trap stop_load EXIT
if [ "${LOADED:-0}" = 1 ]; then
  export E2E_TIMEOUT="${E2E_TIMEOUT:-120m}"
  bound=$((rounds * 7200))
  timeout "$bound" taskset -c "$(($(nproc) - 1))" sh -c 'while :; do :; done' &
  load_pids+=($!)
  # shellcheck disable=SC2016 # $1 is the inner shell's
  timeout "$bound" sh -c 'while :; do dd if=/dev/zero of="$1" bs=1M count=64 conv=fsync status=none; rm -f "$1"; done' sh "$logs/io-load" &
  load_pids+=($!)
  echo "soak under load: a CPU hog on core $(($(nproc) - 1)) (pid ${load_pids[0]}), an fsync writer (pid ${load_pids[1]})"
fi
for i in $(seq 1 "$rounds"); do
  start=$SECONDS
  # make test's last step, as it runs there: the integration tier and molecule beside the two
  # end-to-end passes (tests/tools/tiers.sh), each run whole even when another fails.
  if tests/tools/tiers.sh --from integration >"$logs/round-$i.log" 2>&1; then
    echo "soak round $i of $rounds: passed in $((SECONDS - start)) s"
  else
    failed_rounds=$((failed_rounds + 1))
    echo "soak round $i of $rounds: FAILED in $((SECONDS - start)) s (log: $logs/round-$i.log)"
  fi
done
# One line per test and subtest: runs, passes, failures, skips, shortest and longest duration.
printf '%-90s %5s %6s %6s %5s %s\n' test runs passed failed skip seconds
cat "$logs"/round-*.log | awk '
  match($0, /--- (PASS|FAIL|SKIP): [^ ]+ \([0-9.]+s\)/) {
    split(substr($0, RSTART + 4, RLENGTH - 4), f, /[: ()]+/)
    verdict = f[1]; name = f[2]; secs = f[3] + 0
    runs[name]++; count[name, verdict]++
    if (!(name in lo) || secs < lo[name]) lo[name] = secs
    if (secs > hi[name]) hi[name] = secs
  }
  END {
    for (t in runs) {
      printf "%-90s %5d %6d %6d %5d %.0f-%.0f\n", t, runs[t], count[t, "PASS"], count[t, "FAIL"], count[t, "SKIP"], lo[t], hi[t]
      passed += count[t, "PASS"]; failed += count[t, "FAIL"]
    }
    printf "~soak: %d passed, %d failed\n", passed, failed
  }' | sort | sed 's/^~//'
echo "logs: $logs"
[ "$failed_rounds" -eq 0 ]
