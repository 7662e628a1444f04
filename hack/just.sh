#!/usr/bin/env bash
# Prints the directory of the pinned `just` (npm's rust-just, which ships the binary), installing
# it under the cache when missing. make test-e2e puts it first in PATH: the e2e runs `just ans k8s`
# in a repository laid out like seed 000.
set -euo pipefail
version=1.57.0
cache="${K3SF_CACHE:-$HOME/.cache/k3s_flux}"
dir="$cache/just-$version"
if [ ! -x "$dir/node_modules/.bin/just" ]; then
  echo "installing just $version into $dir (npm rust-just)" >&2
  rm -rf "$dir"
  npm install -q --prefix "$dir" --no-audit --no-fund "rust-just@$version" >&2
fi
echo "$dir/node_modules/.bin"
