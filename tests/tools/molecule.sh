#!/usr/bin/env bash
# make test-molecule: `molecule test` of extensions/molecule/default (delegated driver) against
# the local test bed, with molecule and ansible-core 2.19 from hack/requirements-dev.txt's venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
venv="$(hack/venv.sh)"
# molecule.yml names the inventory and the play variables create.yml copies from the test bed;
# molecule wants them to exist before every step, the first destroy included.
mkdir -p .generated/molecule
chmod 700 .generated
[ -e .generated/molecule/inventory.ini ] || : >.generated/molecule/inventory.ini
[ -e .generated/molecule/play-vars.json ] || echo '{}' >.generated/molecule/play-vars.json
# Hermetic: the user's ANSIBLE_* settings and Ansible home play no part (molecule writes its own
# ansible.cfg; molecule.yml names the collections path).
while read -r var; do unset "$var"; done < <(compgen -e | grep '^ANSIBLE_' || true)
# Test-bed slot 2 (tests/bed/testhosts/slot.go) unless told otherwise: make test runs this beside
# the two e2e passes (slots 0 and 1) and the integration tier (slot 3), and its loopback ports must
# not meet theirs.
export K3SF_BED_SLOT="${K3SF_BED_SLOT:-2}"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
start=$SECONDS
PATH="$venv/bin:$PATH" ANSIBLE_HOME="$home" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 NO_COLOR=1 molecule test -s default
echo "molecule test: passed in $((SECONDS - start)) s"
