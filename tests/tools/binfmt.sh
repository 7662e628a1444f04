#!/usr/bin/env bash
# Let this machine run arm64 and armv7 Linux binaries under Debian's qemu-user-static (needs root):
# mounts binfmt_misc when it is not, and registers qemu-aarch64 and qemu-arm from Debian's
# /usr/lib/binfmt.d with the flags F (the interpreter works inside a chroot) and C (setuid
# binaries such as sudo keep their credentials). Registered entries are left as they are.
set -euo pipefail
dir=/proc/sys/fs/binfmt_misc
[ -e "$dir/register" ] || mount -t binfmt_misc binfmt_misc "$dir"
for name in qemu-aarch64 qemu-arm; do
  [ -e "$dir/$name" ] && continue
  conf="/usr/lib/binfmt.d/$name.conf"
  [ -f "$conf" ] || { echo "binfmt.sh: $conf is missing (apt-get install qemu-user-static)" >&2; exit 1; }
  entry="$(grep -v '^#' "$conf" | head -1)"
  # The last field holds the flags: keep Debian's and add C and F.
  flags="${entry##*:}"
  for f in C F; do [[ "$flags" == *"$f"* ]] || flags="$flags$f"; done
  printf '%s' "${entry%:*}:$flags" >"$dir/register"
done
