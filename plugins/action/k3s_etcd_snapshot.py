# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.k3s_etcd_snapshot: sends the k3s_node binary (which serves
this module too, plugin_utils/registry.py) built for the host's OS and CPU; a node that ran
k3s_node already keeps it."""

from __future__ import annotations

from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction


class ActionModule(BinaryModuleAction):
    pass
