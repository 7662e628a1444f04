# Generated from internal/registry by `make docs`; registry_test.go checks it. Do not edit.
# Node binaries: copied to the hosts, small, for every CPU of a homelab's nodes.
NODE_MODULES := k3s_config k3s_node k3s_node_info
# Node modules served by another module's binary: <module>=<binary>.
NODE_SERVED := k3s_etcd_restore=k3s_node k3s_etcd_snapshot=k3s_node k3s_firewall=k3s_node k3s_manifest=k3s_node k3s_prepare=k3s_node k3s_reboot=k3s_node k3s_registries=k3s_config
NODE_PLATFORMS := linux_arm64 linux_arm
# Controller-side modules: one binary serves them all.
CONTROLLER_MODULES := cluster_nodes_info flux_instance flux_operator flux_repo_check flux_status_info k3s_kubeconfig node_drain seed_secret
CONTROLLER_PLATFORMS := linux_amd64 linux_arm64 darwin_amd64 darwin_arm64
