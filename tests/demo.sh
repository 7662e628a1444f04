#!/usr/bin/env bash
# make demo: install the freshly built collection and run the example play
# against the test bed's SSH test hosts (go run ./tests/testbed up ran first).
set -euo pipefail
cd "$(dirname "$0")/.."
generated=.generated
mkdir -p "$generated"
chmod 700 "$generated"

make --no-print-directory collection >/dev/null
ansible-galaxy collection install --force -p "$generated/collections" dist/gitops-k3s_flux-*.tar.gz >/dev/null

# A random cluster token, kept 0600 beside the other generated files.
token_file="$generated/demo-token.yml"
if [ ! -f "$token_file" ]; then
  (umask 077 && printf 'k3s_token: "K10%s"\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$token_file")
fi

inventory="${TMPDIR:-/tmp}/k3sf-testbed/inventory.ini"
export ANSIBLE_COLLECTIONS_PATH="$PWD/$generated/collections" ANSIBLE_NOCOLOR=1
for run in first second; do
  echo "== ansible-playbook examples/k3s_config.yml ($run run)"
  ansible-playbook -i "$inventory" examples/k3s_config.yml -e @examples/k3s_config_vars.yml -e @"$token_file" --diff
done

cat <<EOT

The second run changed nothing. Look around:
  ansible-doc gitops.k3s_flux.k3s_config   (with ANSIBLE_COLLECTIONS_PATH=$PWD/$generated/collections)
  go run ./tests/testbed status
  nsenter -t \$(pgrep -f 'hosts/node2/ssh/sshd_config' | head -1) -m cat /etc/rancher/k3s/config.yaml
  make demo-down                            (removes the test hosts)
EOT
