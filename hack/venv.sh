#!/usr/bin/env bash
# Prints the path of the Python venv of hack/requirements-dev.txt (ansible-core 2.19, ansible-lint,
# yamllint, molecule), making it first when missing: under the cache, keyed by the file's hash, with
# Debian's python3-venv. make lint and the second pass of make test-e2e use it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${K3SF_CACHE:-$HOME/.cache/k3s_flux}"
# An optional name makes a second venv of the same file (sanity: ansible-test installs its own
# pinned requirements into it, which must not change the one the plays run with); `bench` also
# installs the file's `#bench:` lines (make bench's second Python baseline). The venv is keyed by
# the lines it installs, so comments and another venv's lines do not remake it.
name="${1:-}"
pins="$(grep -v '^#' "$root/hack/requirements-dev.txt")"
if [ "$name" = bench ]; then
  pins="$pins"$'\n'"$(sed -n 's/^#bench: //p' "$root/hack/requirements-dev.txt")"
fi
venv="$cache/venv-${name:+$name-}$(printf '%s\n' "$pins" | sha256sum | cut -c1-16)"
# A venv cannot be moved (its scripts name its path): made in place, marked whole once done.
if [ ! -e "$venv/.complete" ]; then
  echo "creating $venv from hack/requirements-dev.txt" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r <(printf '%s\n' "$pins") >&2
  touch "$venv/.complete"
fi
echo "$venv"
