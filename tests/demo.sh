#!/usr/bin/env bash
# make demo: the whole bootstrap, as users run it, against the local test bed
# (go run ./tests/bed/testbed up ran first): playbooks/k8s.yml takes the SSH test hosts to a
# k3s cluster (the k3s stand-in) and hands it off to the real Flux Operator and controllers
# reconciling the test bed's git server. Then runs it again, to show it changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
generated=.generated
mkdir -p "$generated"
chmod 700 "$generated"

status="$(go run ./tests/bed/testbed status)"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$status" "$1"; }
inventory="$(field inventory)"
# The test bed's variables (install script, registry, git key, age key, Infisical
# credentials, FluxInstance), with the kubeconfig where `just fx` looks for it.
printf '{"k8s_cluster_kubeconfig_dest": "%s", "flux_bootstrap_kubeconfig": "%s"}\n' \
  "$root/$generated/kubeconfig" "$root/$generated/kubeconfig" >"$generated/demo-vars.json"

export ANSIBLE_NOCOLOR=1
for run in first second; do
  echo "== ansible-playbook -i $inventory playbooks/k8s.yml ($run run)"
  start=$SECONDS
  ansible-playbook -i "$inventory" playbooks/k8s.yml -e @"$(field play_vars)" -e @"$generated/demo-vars.json" --diff
  echo "== $run run: $((SECONDS - start)) s"
done

cat <<EOT

The cluster is handed off to Flux; the second run changed nothing. The test bed keeps running:
  export KUBECONFIG=$root/$generated/kubeconfig
  kubectl get nodes                  (if you have kubectl)
  just fx get                        (Kustomizations; the flux CLI if present, else flux_status_info)
  just fx sources                    (the GitRepository and the revision it serves)
  just ans k8s -i $inventory -e @$(field play_vars) -e @$generated/demo-vars.json --check --diff
  ansible-doc gitops.k3s_flux.flux_status_info
  make demo-down                     (stops the test bed)
EOT
