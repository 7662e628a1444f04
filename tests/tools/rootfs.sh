#!/usr/bin/env bash
# Print the path of a minimal Debian root filesystem for a test host of another CPU (arm64 by
# default), as a tarball, built once with debootstrap from Debian's mirror and cached under
# ~/.cache/k3s_flux/rootfs (or $K3SF_CACHE/rootfs). It holds what a homelab's node has: sshd,
# sudo, curl; no Python. Needs root, qemu-user-static and debootstrap (make deps).
set -euo pipefail
arch="${1:-arm64}"
cache="${K3SF_CACHE:-$HOME/.cache/k3s_flux}/rootfs"
out="$cache/debian-bookworm-$arch.tar"
# Registered on every call: a cached root filesystem is of no use without it (after a reboot).
"$(dirname "$0")/binfmt.sh"
if [ -f "$out" ]; then echo "$out"; exit 0; fi
mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.build-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
# In a mount namespace of its own: the /proc and /sys debootstrap mounts in the new root vanish
# with it, so nothing is ever removed through them.
if ! unshare --mount --propagation private -- debootstrap --arch="$arch" --variant=minbase \
    --include=openssh-server,sudo,curl bookworm "$tmp/root" http://deb.debian.org/debian >"$tmp/log" 2>&1; then
  tail -n 20 "$tmp/log" >&2
  echo "rootfs.sh: debootstrap of Debian bookworm $arch failed" >&2
  exit 1
fi
rm -f "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/etc/ssh/ssh_host_"*
tar -C "$tmp/root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "rootfs.sh: Debian bookworm $arch in $((SECONDS - start)) s" >&2
echo "$out"
