#!/usr/bin/env bash
# make lint: the Go linters (goimports, go vet with every build tag, staticcheck), then
# yamllint and ansible-lint (production profile) from a venv of hack/requirements-dev.txt, kept under
# the cache and keyed by that file's hash. Needs the module binaries built (ansible-lint
# resolves gitops.k3s_flux.* through them) and Debian's python3-venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cache="${K3SF_CACHE:-$HOME/.cache/k3s_flux}"
source tests/bed/versions.env
tests/tools/build.sh staticcheck goimports >/dev/null
bin="$cache/bin"

# hack/release.sh packs every tracked file into the Galaxy tarball (at most 20 MB): a binary built
# in the tree (go build ./tests/bed/k3sstandin drops k3sstandin there) must never be committed.
echo "lint: no executable binary tracked"
binaries="$(git ls-files -z | python3 -c '
import os, sys
for f in sys.stdin.read().split("\0"):
    if f and os.path.isfile(f) and open(f, "rb").read(4) == b"\x7fELF":
        print(f)
')"
if [ -n "$binaries" ]; then
  echo "ELF binaries are tracked (git rm --cached them; build output belongs in plugins/bin or the cache):" >&2
  echo "$binaries" >&2
  exit 1
fi

echo "lint: goimports"
unformatted="$(git ls-files -z '*.go' | xargs -0 "$bin/goimports-v$GOIMPORTS_VERSION/goimports" -l -local github.com/gitops-k3s-flux/k3s_flux)"
if [ -n "$unformatted" ]; then
  echo "not goimports-formatted (run goimports -w -local github.com/gitops-k3s-flux/k3s_flux):" >&2
  echo "$unformatted" >&2
  exit 1
fi
for tags in "" integration e2e; do
  echo "lint: go vet ${tags:+-tags $tags}"
  go vet ${tags:+-tags "$tags"} ./...
  echo "lint: staticcheck ${tags:+-tags $tags}"
  "$bin/staticcheck-v$STATICCHECK_VERSION/staticcheck" ${tags:+-tags "$tags"} ./...
done

venv="$(hack/venv.sh)"
export PATH="$venv/bin:$PATH"
echo "lint: THIRD_PARTY_NOTICES.md current"
go run ./tests/notices -check
echo "lint: yamllint"
yamllint --strict .
echo "lint: ansible-lint"
# ansible-lint resolves gitops.k3s_flux.* through this tree (its built binaries included), linked
# in as the collection, not through whatever .generated/collections (make demo) may hold.
collections="$(mktemp -d)"
trap 'rm -rf "$collections"' EXIT
mkdir -p "$collections/ansible_collections/gitops"
ln -s "$root" "$collections/ansible_collections/gitops/k3s_flux"
ANSIBLE_HOME="$cache/ansible-lint-home" ANSIBLE_COLLECTIONS_PATH="$collections" ansible-lint --nocolor -q
echo "lint: clean"
