# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.flux_status_info: sends the controller-side binary built for the host's OS and CPU."""

from __future__ import annotations

from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction


class ActionModule(BinaryModuleAction):
    pass
