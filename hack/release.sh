#!/usr/bin/env bash
# make release: the collection tarball Galaxy takes (at most $2 MB) into $1, beside the controller
# binaries of the platforms named after it, xz-compressed. The tarball holds the tracked files, the node
# binaries for every platform and plugins/bin/SHA256SUMS but not the controller binary: a
# controller-side module's action plugin fetches the controller binary for the controller's platform from
# the release on first use, checked against SHA256SUMS (plugins/plugin_utils/binary_module.py).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
limit_mb="$2"
shift 2
cd "$root"
version="$(sed -n 's/^version: //p' galaxy.yml)"
mkdir -p "$out"

# Each controller binary compressed (xz -6: about 11 s each on 2 cores, 12 MB), unless the payload
# there is of this very build and level: make build rewrites the binaries every time, so their sums
# decide. The end-to-end tests build theirs with RELEASE_XZ_LEVEL=1 (1.3 s each, 14 MB): the same
# format and fetch, 40 s less of a CI run; a release is made at the default.
level="${RELEASE_XZ_LEVEL:-6}"
for p in "$@"; do
  payload="$out/gitops-k3s_flux-$version-controller-$p.xz"
  sum="$(sed -n "s|  plugins/bin/$p/controller\$||p" plugins/bin/SHA256SUMS)"
  [ -n "$sum" ] || { echo "plugins/bin/SHA256SUMS has no plugins/bin/$p/controller: run make build" >&2; exit 1; }
  if [ -f "$payload" ] && [ "$(cat "$out/.$p.sha256" 2>/dev/null)" = "$sum xz-$level" ]; then
    continue
  fi
  xz -T2 "-$level" -c "plugins/bin/$p/controller" >"$payload.tmp"
  mv -f "$payload.tmp" "$payload"
  echo "$sum xz-$level" >"$out/.$p.sha256"
done

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

git ls-files -z | tar --null -T - -cf - | tar -C "$stage" -xf -
# The build's outputs the tarball carries: the node binaries of every platform and the sums (the
# modules themselves are the tracked Python files in plugins/modules: docs and argument spec).
for d in plugins/bin/*/; do
  for f in "$d"*; do
    [ "$(basename "$f")" = controller ] || { mkdir -p "$stage/$d" && cp -p "$f" "$stage/$f"; }
  done
done
cp -p plugins/bin/SHA256SUMS "$stage/plugins/bin/SHA256SUMS"

ansible-galaxy collection build --force --output-path "$out" "$stage" >/dev/null
tarball="$out/gitops-k3s_flux-$version.tar.gz"
# ansible-builder installs what the tarball declares into every execution environment that holds
# it: no Ansible, development tool or pinned version there, and every file its metadata names in it.
go run ./tests/eedeps "$tarball"
(cd "$out" && sha256sum "$(basename "$tarball")" gitops-k3s_flux-"$version"-controller-*.xz >SHA256SUMS)
for f in "$tarball" "$out"/gitops-k3s_flux-"$version"-controller-*.xz; do
  awk -v f="$f" -v s="$(stat -c %s "$f")" 'BEGIN { printf "  %-60s %6.2f MB\n", f, s / 1048576 }'
done
size="$(stat -c %s "$tarball")"
if [ "$size" -gt $((limit_mb * 1024 * 1024)) ]; then
  echo "$tarball is $((size / 1024 / 1024)) MB, more than Galaxy's $limit_mb MB" >&2
  exit 1
fi
