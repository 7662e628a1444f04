#!/usr/bin/env bash
# make lint: the Go linters (goimports, go vet with every build tag, staticcheck), then
# yamllint, ansible-lint (production profile), antsibull-changelog and antsibull-docs from a venv of hack/requirements-dev.txt, kept under
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
for tags in "" integration,stress e2e; do  # stress: make stress-readiness's test, vetted with the integration tests
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
# .ansible-lint leaves tests/ out, and with it the sanity ignore file: named here, it goes through
# certification's `sanity` rule (no ignore under plugins/ or roles/ but the few it allows).
echo "lint: ansible-lint sanity rule on tests/sanity/ignore-2.19.txt"
ANSIBLE_HOME="$cache/ansible-lint-home" ANSIBLE_COLLECTIONS_PATH="$collections" ansible-lint --nocolor -q tests/sanity/ignore-2.19.txt

# Certification's changelog and documentation checks. antsibull-docs renders every module's,
# plugin's and role's docs as the Ansible documentation site does: over a minute of CPU, so it runs
# again only when what it reads changed (a stamp named after the hash of those files and of the
# tools' pins, made once it passed).
echo "lint: antsibull-changelog lint, CHANGELOG.rst current"
antsibull-changelog lint
antsibull-changelog generate --output "$collections/CHANGELOG.rst"
if ! cmp -s "$collections/CHANGELOG.rst" CHANGELOG.rst; then
  echo "CHANGELOG.rst is not what antsibull-changelog generates from changelogs/changelog.yaml: run antsibull-changelog generate" >&2
  exit 1
fi
docs_inputs="$( (echo galaxy.yml; echo hack/requirements-dev.txt; find plugins roles meta docs/docsite \( -path plugins/bin -o -name __pycache__ \) -prune -o -type f -print) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-32)"
stamp="$cache/antsibull-docs-passed/$docs_inputs"
if [ -e "$stamp" ]; then
  echo "lint: antsibull-docs lint-collection-docs: passed before on these files"
else
  echo "lint: antsibull-docs lint-collection-docs"
  (cd "$collections/ansible_collections/gitops/k3s_flux" &&
    ANSIBLE_HOME="$cache/ansible-lint-home" ANSIBLE_COLLECTIONS_PATH="$collections" antsibull-docs lint-collection-docs --plugin-docs .)
  mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi

# The example execution environment: ansible-builder makes its build context (a container build
# cannot run here). The image's last stage must take the collection from the galaxy stage, then
# place the controller binary (as root: the stage's user until USER), and only then set its user.
echo "lint: ansible-builder create examples/execution-environment"
ee="$collections/ee-context"
ansible-builder create -f examples/execution-environment/execution-environment.yml -c "$ee" --output-filename Containerfile >/dev/null
line() { grep -n -m1 -F -- "$1" "$ee/Containerfile" | cut -d: -f1; }
final="$(line 'FROM base AS final')"
copied="$(awk -v from="$final" 'NR > from && index($0, "COPY --from=galaxy /usr/share/ansible /usr/share/ansible") { print NR; exit }' "$ee/Containerfile")"
placed="$(line 'place_controller_binary.py /usr/share/ansible/collections')"
user="$(line 'USER 1000')"
if [ -z "$final" ] || [ -z "$copied" ] || [ -z "$placed" ] || [ -z "$user" ] ||
  ! [ "$final" -lt "$copied" ] || ! [ "$copied" -lt "$placed" ] || ! [ "$placed" -lt "$user" ]; then
  echo "examples/execution-environment: the Containerfile ansible-builder made does not place the controller binary in its final stage, after the collection and before USER (lines: final ${final:-none}, collection ${copied:-none}, placed ${placed:-none}, USER ${user:-none})" >&2
  exit 1
fi
cmp examples/execution-environment/place_controller_binary.py "$ee/_build/k3s_flux/place_controller_binary.py"
grep -q '^  - name: gitops.k3s_flux$' "$ee/_build/requirements.yml" || { echo "examples/execution-environment: the build context does not install gitops.k3s_flux" >&2; exit 1; }

echo "lint: clean"
