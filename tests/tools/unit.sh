#!/usr/bin/env bash
# make test-unit: go test ./... with each test binary run as an unprivileged user (nobody; compiled
# as root in root's Go cache, tests/tools/as-nobody.sh), its own HOME and Go caches under
# /var/cache/k3s_flux-unit, and a coverage gate on the modules that carry logic (the controller modules and the node
# modules but k3s_reboot, whose logic is the action plugin's wait and a detached systemctl): the unit tier needs
# no root, no network once its module cache is filled, and no test bed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
gate=80
gated=(cluster_nodes_info flux_instance flux_operator flux_repo_check flux_status_info seed_secret k3s_kubeconfig k3s_node k3s_node_info node_drain k3s_prepare k3s_etcd_restore k3s_etcd_snapshot k3s_firewall k3s_manifest)
# Run as the test user (tests/tools/as-nobody.sh) when started as root.
run_as() {
  if [ "$(id -u)" -eq 0 ]; then
    "$root/tests/tools/as-nobody.sh" "$@"
  else
    "$@"
  fi
}

cd "$root"
start=$SECONDS
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# GOTESTFLAGS: make test passes -v, so that its summary counts each test.
exec_as=()
[ "$(id -u)" -ne 0 ] || exec_as=(-exec "$root/tests/tools/as-nobody.sh")
# shellcheck disable=SC2086 # flags, split on purpose
if ! go test -count=1 -cover "${exec_as[@]}" ${GOTESTFLAGS:-} ./... 2>&1 | tee "$out"; then
  echo "unit tests failed" >&2
  exit 1
fi
# The action plugins' Python, imported as the collection Ansible loads.
pydir="$(mktemp -d)"
trap 'rm -f "$out"; rm -rf "$pydir"' EXIT
mkdir -p "$pydir/ansible_collections/gitops"
ln -s "$root" "$pydir/ansible_collections/gitops/k3s_flux"
chmod -R a+rX "$pydir"
# Each Python test with Debian's ansible-core, as the test user, then with ansible-core 2.19 (the
# venv of hack/requirements-dev.txt, in this user's cache, so as this user): the plugins touch Ansible's
# private API (plugin_utils/ansible_private.py) the way each version wants.
venv="$(hack/venv.sh)"
for python in /usr/bin/python3 "$venv/bin/python"; do
  as=(run_as)
  [ "$python" = /usr/bin/python3 ] || as=()
  version="$("$python" -c 'from ansible.release import __version__; print(__version__)')"
  for f in $(find tests/unit -name 'test_*.py' | sort); do
    if ! "${as[@]}" env PYTHONPATH="$pydir" PYTHONDONTWRITEBYTECODE=1 "$python" "$f"; then
      echo "unit tests failed with ansible-core $version: $f" >&2
      exit 1
    fi
  done
done
echo "unit tests as $(run_as id -un) (Python: also with ansible-core 2.19) in $((SECONDS - start)) s"
failed=0
for m in "${gated[@]}"; do
  pct="$(sed -n "s|^ok .*/modules/${m}[[:space:]].*coverage: \([0-9.]*\)% of statements.*|\1|p" "$out")"
  if [ -z "$pct" ] || awk -v p="$pct" -v g="$gate" 'BEGIN { exit !(p < g) }'; then
    echo "coverage of modules/$m is ${pct:-unknown}%, below the ${gate}% gate" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "coverage gate: every gated module at ${gate}% or more"
exit "$failed"
