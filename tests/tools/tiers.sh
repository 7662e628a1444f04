#!/usr/bin/env bash
# make test: every tier in turn, each run even when an earlier one failed (a failure must not hide
# what else is wrong), its output shown as it comes, then one summary: tier, result, tests passed
# and failed, seconds. Exits non-zero when any tier failed. The two end-to-end passes run side by
# side (tests/tools/sidebyside.sh: each line after its tier's name; the second pass in test-bed slot
# 1, tests/bed/testhosts/slot.go), once the test bed tier has made what both need, and beside them
# the integration tier (slot 3) and molecule (slot 2, tests/tools/molecule.sh), both mostly waiting
# on Flux.
#
# Counted: go test's `--- PASS` and `--- FAIL` lines (tests and subtests: the go tiers run with -v),
# Python unittest's `Ran N tests` (less its failures and errors), and a tier that counts nothing
# (lint, sanity, the test bed's build, molecule) as one check. A tier that fails before any test
# failed (a build error) counts one failure.
#
# --from TIER starts at the step that holds TIER (make soak runs the last step so, as make test does).
set -uo pipefail
from=
if [ "${1:-}" = --from ] && [ -n "${2:-}" ]; then
  from="$2"
elif [ $# -gt 0 ]; then
  echo "usage: tiers.sh [--from TIER]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root" || exit 1
logs="$(mktemp -d /tmp/k3sf-tiers-XXXXXX)"
trap 'rm -rf "$logs"' EXIT

# tier name, then the make targets and variables that run it; ";;" between tiers that run side by side.
tiers=(
  "lint|lint"
  "sanity|test-sanity"
  # -j2: on a new machine the arm hosts' root filesystems (debootstrap: downloads, then one
  # emulated CPU) are made while the bed's binaries compile, not after them.
  "test bed|-j2 testbed-bin testbed-rootfs build e2e-tools"
  "unit|test-unit GOTESTFLAGS=-v"
  # The last step, four at once: the integration tier (test-bed slot 3) and molecule (slot 2) spend
  # their time waiting on Flux and an API server, so they run beside the two end-to-end passes
  # (slots 0 and 1), which keep both cores busy, instead of before them.
  "integration|test-integration GOTESTFLAGS=-v K3SF_BED_SLOT=3;;molecule|test-molecule;;e2e ansible-core $(dpkg-query -W -f '${Version}' ansible-core 2>/dev/null | cut -d- -f1)|e2e-pass-debian;;e2e ansible-core $(sed -n 's/^ansible-core==//p' hack/requirements-dev.txt)|e2e-pass-pypi"
)

# The step to start at: the first, or the one holding --from's tier.
first=0
if [ -n "$from" ]; then
  first=-1
  for i in "${!tiers[@]}"; do
    case ";;${tiers[$i]}" in
      *";;$from|"*) first=$i && break ;;
    esac
  done
  if [ "$first" -lt 0 ]; then
    echo "tiers.sh: no tier named \"$from\"" >&2
    exit 2
  fi
fi

# count prints "passed failed" for a tier's log and exit code.
count() {
  local log="$1" rc="$2"
  awk -v rc="$rc" '
    /^[[:space:]]*--- PASS: / { passed++ }
    /^[[:space:]]*--- FAIL: / { failed++ }
    /^Ran [0-9]+ tests? in / { ran += $2; py = 1 }
    /^FAILED \(/ { n = split($0, f, /[^0-9]+/); for (i = 1; i <= n; i++) if (f[i] != "") pyfailed += f[i] }
    END {
      passed += ran - pyfailed; failed += pyfailed
      if (passed + failed == 0) { if (rc == 0) passed = 1; else failed = 1 }
      else if (rc != 0 && failed == 0) failed = 1
      print passed + 0, failed + 0
    }' "$log"
}

summary=()
failures=()
total_passed=0
total_failed=0
failed_tiers=0
step=0
for entry in "${tiers[@]:first}"; do
  # The tiers of this step, side by side when more than one.
  names=()
  commands=()
  rest="$entry;;"
  while [ -n "$rest" ]; do
    tier="${rest%%;;*}"
    rest="${rest#*;;}"
    names+=("${tier%%|*}")
    commands+=("${names[-1]}" "make --no-print-directory ${tier#*|}")
    echo "=== tier: ${names[-1]} (make ${tier#*|})"
  done
  dir="$logs/$step"
  step=$((step + 1))
  tests/tools/sidebyside.sh "$dir" "${commands[@]}"
  for i in "${!names[@]}"; do
    name="${names[$i]}"
    rc="$(cat "$dir/$i.rc" 2>/dev/null || echo 1)"
    seconds="$(cat "$dir/$i.seconds" 2>/dev/null || echo 0)"
    read -r passed failed < <(count "$dir/$i.log" "$rc")
    result=ok
    if [ "$rc" -ne 0 ]; then
      result=FAILED
      failed_tiers=$((failed_tiers + 1))
      failures+=("$name|$dir/$i.log")
    fi
    echo "=== tier: $name: $result in $seconds s ($passed passed, $failed failed)"
    summary+=("$(printf '%-28s %-7s %7d %7d %8d' "$name" "$result" "$passed" "$failed" "$seconds")")
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
  done
done

# What failed, where the end of the output shows it (CI keeps the end): each failed tier's failed
# tests, their assertions and the failed plays' lines, and the whole logs kept.
if [ "${#failures[@]}" -gt 0 ]; then
  trap - EXIT
  echo
  echo "make test: what failed (every tier's whole log is kept in $logs)"
  for f in "${failures[@]}"; do
    echo "--- ${f%%|*}"
    grep -E '^[[:space:]]*--- FAIL: |^[[:space:]]+(Error|Messages):|fatal: \[|^FAIL[[:space:]]|\*\*\* ' "${f#*|}" | cut -c1-400 | head -60
  done
fi

echo
echo "make test: summary"
printf '%-28s %-7s %7s %7s %8s\n' tier result passed failed seconds
printf '%s\n' "${summary[@]}"
printf '%-28s %-7s %7d %7d %8d\n' total "$([ "$failed_tiers" -eq 0 ] && echo ok || echo FAILED)" "$total_passed" "$total_failed" "$SECONDS"
# The plain closing line CI reads.
echo "test: $total_passed passed, $total_failed failed"
[ "$failed_tiers" -eq 0 ]
