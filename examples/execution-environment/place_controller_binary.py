# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Puts the controller binary of the installed gitops.k3s_flux, built for this machine's platform,
inside the collection, where its action plugins look first: an execution environment built with it
never downloads, whatever user its jobs run as.

Run once the collection is installed (execution-environment.yml: the last step of the image), as
the user who owns the collection, with the collections directory as its argument
(/usr/share/ansible/collections where ansible-builder installs them). It fetches the release's xz
file for this platform from GITOPS_K3S_FLUX_RELEASE_URL (a URL, or a file:// directory for a build
without network), else from the collection's GitHub release, keeps it only when its sha256 is the
one the collection's plugins/bin/SHA256SUMS gives, and places it mode 0755: readable and runnable by
every user, writable by none but its owner. It fails naming what went wrong, and leaves nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: %s COLLECTIONS_DIR\n" % argv[0])
        return 2
    sys.path.insert(0, os.path.abspath(argv[1]))
    try:
        from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import binary_module as bm
        from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.registry import CONTROLLER
    except ImportError as e:
        sys.stderr.write("gitops.k3s_flux is not installed under %s (or ansible-core is missing): %s\n" % (argv[1], e))
        return 1
    root = bm.COLLECTION_ROOT
    here = os.uname()
    try:
        platform = bm.platform_of("%s %s" % (here.sysname, here.machine))
    except ValueError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    dest = bm.binary_path(root, CONTROLLER, platform)
    sha256 = bm.expected_sha256(root, os.path.relpath(dest, root))
    if not sha256:
        sys.stderr.write("%s lists no controller binary for %s\n" % (os.path.join(root, bm.SUMS), platform))
        return 1
    url = bm.payload_url(root, platform, os.environ.get(bm.RELEASE_URL_ENV))
    placing = os.path.join(os.path.dirname(dest), ".%s.placing" % CONTROLLER)
    work = tempfile.mkdtemp()
    try:
        fetched = os.path.join(work, bm.cached_name(CONTROLLER, sha256))
        bm.fetch_controller(url, sha256, fetched)
        shutil.copyfile(fetched, placing)
        os.chmod(placing, 0o755)
        os.replace(placing, dest)
    except (OSError, ValueError) as e:
        sys.stderr.write("could not place the controller binary for %s from %s: %s\n" % (platform, url, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if os.path.lexists(placing):
            os.remove(placing)
    print("placed %s (sha256 %s) from %s" % (dest, sha256, url))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
