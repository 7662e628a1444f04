# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from internal/registry by `make docs`; registry_test.go checks it. Do not edit.
"""The binary that serves each module of gitops.k3s_flux."""

from __future__ import annotations

CONTROLLER = "controller"

BINARY = {
    "cluster_nodes": "controller",
    "cluster_nodes_info": "controller",
    "flux_instance": "controller",
    "flux_operator": "controller",
    "flux_repo_check": "controller",
    "flux_status": "controller",
    "flux_status_info": "controller",
    "k3s_config": "k3s_config",
    "k3s_etcd_restore": "k3s_node",
    "k3s_etcd_snapshot": "k3s_node",
    "k3s_firewall": "k3s_node",
    "k3s_kubeconfig": "controller",
    "k3s_manifest": "k3s_node",
    "k3s_node": "k3s_node",
    "k3s_node_info": "k3s_node",
    "k3s_prepare": "k3s_node",
    "k3s_reboot": "k3s_node",
    "k3s_registries": "k3s_config",
    "node_drain": "controller",
    "seed_secret": "controller",
}
