# Generated from internal/registry by `make docs`; registry_test.go checks it. Do not edit.
# Node binaries: copied to the hosts, small, for every CPU of a homelab's nodes.
NODE_MODULES := k3s_config k3s_node
NODE_PLATFORMS := linux_amd64 linux_arm64 linux_arm
# The controller binary, which serves every controller-side module.
CONTROLLER_PLATFORMS := linux_amd64 linux_arm64 darwin_amd64 darwin_arm64
