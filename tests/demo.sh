#!/usr/bin/env bash
# make demo: install the freshly built collection, then run the example plays against the
# test bed (go run ./tests/testbed up ran first): k3s_config on the SSH test hosts, and the
# hand-off to Flux (operator, seed Secrets, FluxInstance, status) against its API server.
set -euo pipefail
cd "$(dirname "$0")/.."
generated=.generated
mkdir -p "$generated"
chmod 700 "$generated"

make --no-print-directory collection >/dev/null
ansible-galaxy collection install --force -p "$generated/collections" dist/gitops-k3s_flux-*.tar.gz >/dev/null

status="$(go run ./tests/testbed status)"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$status" "$1"; }

# A random cluster token and an age key, kept 0600 beside the other generated files.
token_file="$generated/demo-token.yml"
if [ ! -f "$token_file" ]; then
  (umask 077 && printf 'k3s_token: "K10%s"\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$token_file")
fi
age_file="$generated/demo-age.agekey"
if [ ! -f "$age_file" ]; then
  (umask 077 && go run filippo.io/age/cmd/age-keygen@v1.3.2 -o "$age_file" 2>/dev/null)
fi
# The FluxInstance of examples/flux/cluster.yaml, pointed at the test bed's git server.
python3 - "$(field git_ssh_url)" >"$generated/demo-cluster.yaml" <<'PY'
import sys
url = sys.argv[1]
text = open("examples/flux/cluster.yaml").read()
text = text.replace("ssh://git@github.com/example-org/home-ops.git", url).replace("path: flux", "path: clusters/test")
print(text, end="")
PY

export ANSIBLE_COLLECTIONS_PATH="$PWD/$generated/collections" ANSIBLE_NOCOLOR=1
inventory="$(field inventory)"
for run in first second; do
  echo "== ansible-playbook examples/k3s_config.yml ($run run)"
  ansible-playbook -i "$inventory" examples/k3s_config.yml -e @examples/k3s_config_vars.yml -e @"$token_file" --diff
done
echo "== ansible-playbook examples/k3s_install.yml (the k3s stand-in, served by the test bed)"
ansible-playbook -i "$inventory" examples/k3s_install.yml -e k3s_install_url="$(field k3s_install_url)"
# The hand-off's variables, as JSON: -e key=value would split the known_hosts line.
python3 - "$status" "$PWD" >"$generated/demo-handoff.json" <<'PY'
import json, sys
s, cwd = json.loads(sys.argv[1]), sys.argv[2]
json.dump({
    "ansible_python_interpreter": "/usr/bin/python3",
    "kubeconfig": s["kubeconfig"],
    "flux_operator_chart_ref": s["chart_ref"],
    "flux_operator_plain_http": True,
    "git_deploy_key_file": s["git_deploy_key"],
    "git_known_hosts": s["git_known_hosts"],
    "sops_age_key_file": cwd + "/.generated/demo-age.agekey",
    "flux_instance_src": cwd + "/.generated/demo-cluster.yaml",
}, sys.stdout, indent=2)
PY
chmod 600 "$generated/demo-handoff.json"
for run in first second; do
  echo "== ansible-playbook examples/handoff.yml ($run run)"
  ansible-playbook -i localhost, examples/handoff.yml -e @"$generated/demo-handoff.json"
done

cat <<EOT

Both second runs changed nothing. The test bed keeps running:
  kubeconfig: $(field kubeconfig)
  ANSIBLE_COLLECTIONS_PATH=$PWD/$generated/collections ansible-doc gitops.k3s_flux.flux_status
  go run ./tests/testbed status
  make demo-down     (stops the test bed)
EOT
