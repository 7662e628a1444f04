#!/usr/bin/env bash
# ansible-test sanity for the collection, as collection CI runs it without Docker: --local with
# ansible-test's own pinned requirements (--requirements), on Python 3.11 from the venv of
# hack/requirements-dev.txt (ansible-core 2.19). Run from a copy of the tracked files at
# <tmp>/ansible_collections/gitops/k3s_flux, the path ansible-test needs, so that its output and
# the built binaries stay out of the tree. tests/sanity/ignore-2.19.txt says what cannot apply.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$("$root/hack/venv.sh" sanity)"

# ansible-test bootstraps pip in each venv it makes with get-pip.py from ci-files.testing.ansible.com,
# which is out of reach here. This stand-in does the same with Python's own ensurepip, then pip
# (from PyPI) installs what get-pip was asked for.
pip_version="$("$venv/bin/python" - <<'PY'
import inspect, re
import ansible_test._internal.python_requirements as r
print(re.search(r"pip='([0-9.]+)'", inspect.getsource(r.get_venv_packages)).group(1))
PY
)"
get_pip="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$get_pip")"
cat >"$get_pip.tmp" <<'PY'
# Stand-in for get-pip.py (written by gitops.k3s_flux's tests/tools/sanity.sh): ensurepip installs
# Python's bundled pip, then pip installs what get-pip was asked for.
import ensurepip
import runpy
import sys

ensurepip.bootstrap()
sys.argv = ["pip", "install", "--upgrade"] + [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
PY
mv "$get_pip.tmp" "$get_pip"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/gitops/k3s_flux"
mkdir -p "$dest"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$dest"
cd "$dest"
start=$(date +%s)
"$venv/bin/ansible-test" sanity --local --requirements --python 3.11 --color no "$@"
echo "ansible-test sanity: clean in $(( $(date +%s) - start )) s"
