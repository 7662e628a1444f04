#!/usr/bin/env bash
# sidebyside.sh DIR LABEL COMMAND [LABEL COMMAND ...]: runs the commands at once (bash -c each),
# shows their output as it comes, each line after its "[LABEL] " when there are more than one,
# and keeps each one's own output in DIR/N.log, its exit code in DIR/N.rc and its seconds in
# DIR/N.seconds (N from 0, in the order given). Exits non-zero when any of them failed.
# make test-e2e runs the two ansible-core passes this way, and make test (tiers.sh) every tier.
set -uo pipefail
dir="$1"
shift
if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
  echo "usage: sidebyside.sh DIR LABEL COMMAND [LABEL COMMAND ...]" >&2
  exit 2
fi
mkdir -p "$dir"
several=$(($# > 2))
pids=()
n=0
while [ $# -gt 0 ]; do
  label="$1" command="$2"
  shift 2
  (
    start=$SECONDS
    if [ "$several" = 1 ]; then
      bash -c "$command" 2>&1 | tee "$dir/$n.log" | sed -u "s|^|[$label] |"
    else
      bash -c "$command" 2>&1 | tee "$dir/$n.log"
    fi
    echo "${PIPESTATUS[0]}" >"$dir/$n.rc"
    echo $((SECONDS - start)) >"$dir/$n.seconds"
  ) &
  pids+=($!)
  n=$((n + 1))
done
# A signal to this script stops the commands too.
trap 'kill "${pids[@]}" 2>/dev/null' INT TERM
wait "${pids[@]}"
failed=0
for ((i = 0; i < n; i++)); do
  [ "$(cat "$dir/$i.rc" 2>/dev/null)" = 0 ] || failed=1
done
exit "$failed"
