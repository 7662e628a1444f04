#!/bin/sh
# Test bed stand-in for https://get.k3s.io: installs the k3s stand-in the way
# the real installer installs k3s, and starts it as a "service".
#   INSTALL_K3S_VERSION   version to report (k3s --version); default @DEFAULT_VERSION@
#   INSTALL_K3S_EXEC      "server ..." or "agent ..." plus flags; default server (agent when K3S_URL is set)
#   K3S_URL, K3S_TOKEN    join an existing server (as the real installer)
#   INSTALL_K3S_SKIP_DOWNLOAD=true   use the binary already at /usr/local/bin/k3s (airgap)
#   INSTALL_K3S_SKIP_ENABLE=true     install only, the unit neither enabled nor started
#   INSTALL_K3S_SKIP_START=true      install and enable only
#   INSTALL_K3S_FORCE_RESTART=true   restart even when nothing changed
# As get.k3s.io's service_enable_and_start: the start is `systemctl restart`,
# which blocks until k3s is up (TimeoutStartSec=0: for ever for an agent that
# cannot join), and is skipped when the binary, the unit and its environment
# hash the same as before the install ("No change detected").
# It writes the unit as the real installer does (create_systemd_service_file);
# the test hosts have no systemd: their /usr/local/bin/systemctl (systemctl.sh,
# put there when the test bed starts a host) runs the unit's ExecStart.
set -eu
BIN_DIR=/usr/local/bin
STATE=/var/lib/rancher/k3s/standin
DOWNLOAD_URL="@DOWNLOAD_URL@"
SHA256="@SHA256@"

info() { echo "[INFO]  $*"; }
fatal() { echo "[ERROR] $*" >&2; exit 1; }

version="${INSTALL_K3S_VERSION:-@DEFAULT_VERSION@}"
cmd="${INSTALL_K3S_EXEC:-}"
case "$cmd" in
  server*|agent*) ;;
  "") if [ -n "${K3S_URL:-}" ]; then cmd=agent; else cmd=server; fi ;;
  *) if [ -n "${K3S_URL:-}" ]; then cmd="agent $cmd"; else cmd="server $cmd"; fi ;;
esac
case "$cmd" in agent*) service=k3s-agent ;; *) service=k3s ;; esac

mkdir -p "$BIN_DIR" "$STATE"
chmod 700 "$STATE"
# get_installed_hashes: the binary (one stand-in binary stands for every
# version: its version file stands for its content), the unit and its environment.
unit_file="/etc/systemd/system/$service.service"
env_file="$unit_file.env"
installed_hashes() { sha256sum "$BIN_DIR/k3s" "$STATE/version" "$unit_file" "$env_file" 2>&1 || true; }
PRE_INSTALL_HASHES="$(installed_hashes)"
if [ "${INSTALL_K3S_SKIP_DOWNLOAD:-false}" != true ]; then
  info "Downloading k3s ${version} (test bed stand-in)"
  tmp="$(mktemp)"
  if command -v curl >/dev/null 2>&1; then curl -sfL -o "$tmp" "$DOWNLOAD_URL"; else wget -qO "$tmp" "$DOWNLOAD_URL"; fi
  echo "$SHA256  $tmp" | sha256sum -c - >/dev/null || fatal "Download sha256 does not match"
  chmod 755 "$tmp"
  mv -f "$tmp" "$BIN_DIR/k3s"
fi
[ -x "$BIN_DIR/k3s" ] || fatal "no k3s binary at $BIN_DIR/k3s"
printf '%s\n' "$version" >"$STATE/version"

# create_env_file: the unit's environment file (EnvironmentFile=-), 0600, with the K3S_ and
# CONTAINERD_ variables of the install's environment, then its proxy variables in either case, as
# the shell's export prints them (dash: NAME='value'; systemd takes the quotes off).
mkdir -p "${env_file%/*}"
sh -c export | while read -r _ v; do echo "$v"; done | grep -E '^(K3S|CONTAINERD)_' >"$env_file" || true
sh -c export | while read -r _ v; do echo "$v"; done | grep -Ei '^(NO|HTTP|HTTPS)_PROXY' >>"$env_file" || true
chmod 600 "$env_file"
# create_systemd_service_file: K3S_URL and K3S_TOKEN stay in the environment
# file; the command's words after the first, each quoted.
# shellcheck disable=SC2086
set -- $cmd
first="$1"; shift
{
  cat <<UNIT
[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-$env_file
KillMode=process
Delegate=yes
User=root
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=$BIN_DIR/k3s \\
    $first \\
UNIT
  for a in "$@"; do printf "\t'%s' \\\\\n" "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")"; done
  echo
} >"$unit_file"

cat >"$BIN_DIR/$service-uninstall.sh" <<UNINSTALL
#!/bin/sh
set -e
$BIN_DIR/systemctl stop $service || true
$BIN_DIR/systemctl disable $service || true
rm -rf /etc/rancher/k3s /var/lib/rancher/k3s "$BIN_DIR/k3s" "$BIN_DIR/$service-uninstall.sh" "$unit_file" "$env_file"
UNINSTALL
chmod 755 "$BIN_DIR/$service-uninstall.sh"

[ "${INSTALL_K3S_SKIP_ENABLE:-false}" = true ] && exit 0
info "systemd: Enabling $service unit"
"$BIN_DIR/systemctl" enable "$unit_file"
"$BIN_DIR/systemctl" daemon-reload
[ "${INSTALL_K3S_SKIP_START:-false}" = true ] && exit 0
if [ "$PRE_INSTALL_HASHES" = "$(installed_hashes)" ] && [ "${INSTALL_K3S_FORCE_RESTART:-false}" != true ]; then
  info "No change detected so skipping service start"
  exit 0
fi
info "systemd: Starting $service"
"$BIN_DIR/systemctl" restart "$service"
