#!/usr/bin/env bash
# as-nobody.sh COMMAND [ARG...]: the unit tier's (tests/tools/unit.sh) way to run a command as the
# unprivileged test user (nobody), with a HOME and Go caches of its own under
# /var/cache/k3s_flux-unit (a test that runs go itself uses them). The tree must be readable by that
# user; writes go to the caches and $TMPDIR only.
#
# Also go test's -exec: go test compiles as root, in root's Go cache that make lint and make build
# filled, and runs each test binary (COMMAND, named *.test) through here. It leaves the binary, and
# the coverage directory it names with -test.gocoverdir, in its work directory, which only root may
# enter: the binary is copied out to a directory the test user can read, and its coverage data,
# written to one it can write, copied back.
set -euo pipefail
user=nobody
cache=/var/cache/k3s_flux-unit
command=("$@")
coverdir=
case "$1" in
  *.test)
    dir="$(mktemp -d /tmp/k3sf-unit-XXXXXX)"
    trap 'rm -rf "$dir"' EXIT
    chmod 755 "$dir"
    install -m 755 "$1" "$dir/$(basename "$1")"
    command=("$dir/$(basename "$1")")
    shift
    for arg in "$@"; do
      case "$arg" in
        -test.gocoverdir=*)
          coverdir="${arg#*=}"
          install -d -o "$user" "$dir/cover"
          command+=("-test.gocoverdir=$dir/cover")
          ;;
        *) command+=("$arg") ;;
      esac
    done
    ;;
esac
mkdir -p "$cache"
chown "$user" "$cache"
rc=0
setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
  env HOME="$cache" GOCACHE="$cache/build" GOMODCACHE="$cache/mod" GOTMPDIR= TMPDIR=/tmp \
  PATH="$PATH" GOFLAGS="${GOFLAGS:-}" GOTOOLCHAIN=local "${command[@]}" || rc=$?
if [ -n "$coverdir" ]; then
  cp -r "$dir/cover/." "$coverdir/"
fi
exit "$rc"
