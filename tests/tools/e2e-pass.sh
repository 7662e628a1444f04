#!/usr/bin/env bash
# e2e-pass.sh SLOT [GO TEST FLAGS ...]: one end-to-end pass (make e2e-pass-debian, e2e-pass-pypi),
# its tests in test-bed slot SLOT (tests/bed/testhosts/slot.go) except the longest,
# TestRealK3sEmbeddedEtcd (three real k3s servers, about a quarter of an hour), which runs from the
# start in a go test process of its own, in slot SLOT+3, each line after its name. In the pass's
# own process Go starts a test that calls t.Parallel only once every sequential test is done: it
# then ran its last ten minutes alone, a core half idle. Flags that pick the tests (-run) run them
# in one process, in SLOT.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root" || exit 1
slot="$1"
shift
own=TestRealK3sEmbeddedEtcd
gotest=(go test -tags e2e -count=1 -timeout "${E2E_TIMEOUT:-60m}" -v)
for flag in "$@"; do
  case "$flag" in
  -run | -run=* | -test.run | -test.run=*)
    export K3SF_BED_SLOT="$slot"
    exec "${gotest[@]}" "$@" ./tests/e2e/...
    ;;
  esac
done
logs="$(mktemp -d /tmp/k3sf-pass-XXXXXX)"
trap 'rm -rf "$logs"' EXIT
quoted() { printf ' %q' "$@"; }
tests/tools/sidebyside.sh "$logs" \
  "$own" "K3SF_BED_SLOT=$((slot + 3))$(quoted "${gotest[@]}" -run "^$own\$" "$@") ./tests/e2e/..." \
  others "K3SF_BED_SLOT=$slot$(quoted "${gotest[@]}" -skip "^$own\$" "$@") ./tests/e2e/..."
