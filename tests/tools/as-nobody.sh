#!/usr/bin/env bash
# go test -exec for the unit tier (tests/tools/unit.sh): go test compiles as root, in root's Go
# cache that make lint and make build filled, and each test binary runs here as the unprivileged
# user (nobody), with a HOME and Go caches of its own under /var/cache/k3s_flux-unit (a test that
# runs go itself uses them). go test leaves the binary, and the coverage directory it names with
# -test.gocoverdir, in its work directory, which only root may enter: the binary is copied out to a
# directory the test user can read, and its coverage data, written to one it can write, copied back.
set -euo pipefail
bin="$1"
shift
user=nobody
cache=/var/cache/k3s_flux-unit
dir="$(mktemp -d /tmp/k3sf-unit-XXXXXX)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
install -m 755 "$bin" "$dir/$(basename "$bin")"
args=()
coverdir=
for arg in "$@"; do
  case "$arg" in
    -test.gocoverdir=*)
      coverdir="${arg#*=}"
      install -d -o "$user" "$dir/cover"
      args+=("-test.gocoverdir=$dir/cover")
      ;;
    *) args+=("$arg") ;;
  esac
done
mkdir -p "$cache"
chown "$user" "$cache"
rc=0
setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
  env HOME="$cache" GOCACHE="$cache/build" GOMODCACHE="$cache/mod" GOTMPDIR= TMPDIR=/tmp \
  PATH="$PATH" GOFLAGS="${GOFLAGS:-}" GOTOOLCHAIN=local "$dir/$(basename "$bin")" ${args[@]+"${args[@]}"} || rc=$?
if [ -n "$coverdir" ]; then
  cp -r "$dir/cover/." "$coverdir/"
fi
exit "$rc"
