// Package registry is the one list of the collection's modules: which binary
// serves each, where that binary runs and the platforms it is built for.
// The Makefile's lists (modules.mk), the action plugins' map
// (plugins/plugin_utils/registry.py) and meta/runtime.yml are generated
// from it (make docs); registry_test.go fails when any of them, the
// binaries' own tables (cmd/<binary>/main.go), the action plugins or the
// modules' Python files disagree with it.
package registry

import (
	"path/filepath"
	"slices"
)

// Where a binary runs.
type Where string

const (
	// Node binaries are copied to the managed hosts, which have no Python:
	// small, for every CPU a homelab's nodes have.
	Node Where = "node"
	// The controller binary runs where Ansible runs, for every OS and CPU
	// a controller has.
	Controller Where = "controller"
)

// Binary is one Go binary, built from cmd/<Name>.
type Binary struct {
	Name      string
	Runs      Where
	Platforms []string // <os>_<arch>, Go's names
}

// Module is one Ansible module.
type Module struct {
	Name   string
	Binary string
	// Group is the meta/runtime.yml action group the module belongs to, if
	// any (module_defaults for the modules that reach the cluster).
	Group string
	// Aliases are earlier names, redirected to this one.
	Aliases []string
	// SharedLogic is the internal/ package holding the module's spec and
	// logic when another module runs them too; "" for a module whose own
	// package holds them (module.go, run.go).
	SharedLogic string
}

// ControllerBinary is the binary that serves every controller-side module.
const ControllerBinary = "controller"

// Binaries are the collection's binaries.
var Binaries = []Binary{
	{Name: ControllerBinary, Runs: Controller, Platforms: []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}},
	{Name: "k3s_config", Runs: Node, Platforms: nodePlatforms},
	{Name: "k3s_node", Runs: Node, Platforms: nodePlatforms},
}

// nodePlatforms are the CPUs of a homelab's nodes (arm as armv7).
var nodePlatforms = []string{"linux_amd64", "linux_arm64", "linux_arm"}

// Modules are the collection's modules, by name.
var Modules = []Module{
	{Name: "cluster_nodes_info", Binary: ControllerBinary, Group: "cluster", Aliases: []string{"cluster_nodes"}},
	{Name: "flux_instance", Binary: ControllerBinary, Group: "cluster"},
	{Name: "flux_operator", Binary: ControllerBinary, Group: "cluster"},
	{Name: "flux_repo_check", Binary: ControllerBinary},
	{Name: "flux_status_info", Binary: ControllerBinary, Group: "cluster", Aliases: []string{"flux_status"}},
	{Name: "k3s_config", Binary: "k3s_config", SharedLogic: "internal/k3sconfig"}, // k3s_node runs it in-process
	{Name: "k3s_etcd_restore", Binary: "k3s_node"},
	{Name: "k3s_etcd_snapshot", Binary: "k3s_node"},
	{Name: "k3s_firewall", Binary: "k3s_node"},
	{Name: "k3s_kubeconfig", Binary: ControllerBinary},
	{Name: "k3s_manifest", Binary: "k3s_node"},
	{Name: "k3s_node", Binary: "k3s_node"},
	{Name: "k3s_node_info", Binary: "k3s_node"},
	{Name: "k3s_prepare", Binary: "k3s_node"},
	{Name: "k3s_reboot", Binary: "k3s_node"},
	{Name: "k3s_registries", Binary: "k3s_config", SharedLogic: "internal/k3sconfig"}, // k3s_node runs it in-process
	{Name: "node_drain", Binary: ControllerBinary, Group: "cluster"},
	{Name: "seed_secret", Binary: ControllerBinary, Group: "cluster"},
}

// BinaryNamed is the binary called name.
func BinaryNamed(name string) (Binary, bool) {
	i := slices.IndexFunc(Binaries, func(b Binary) bool { return b.Name == name })
	if i < 0 {
		return Binary{}, false
	}
	return Binaries[i], true
}

// ServedBy are the names a binary answers to (its modules and their
// aliases), sorted.
func ServedBy(binary string) []string {
	var out []string
	for _, m := range Modules {
		if m.Binary == binary {
			out = append(out, m.Name)
			out = append(out, m.Aliases...)
		}
	}
	slices.Sort(out)
	return out
}

// BinariesRunning are the names of the binaries that run there, sorted.
func BinariesRunning(where Where) []string {
	var out []string
	for _, b := range Binaries {
		if b.Runs == where {
			out = append(out, b.Name)
		}
	}
	slices.Sort(out)
	return out
}

// BinaryPath is where make build puts the binary serving module for
// platform, in the collection at root; ok is false for a module the table
// lacks. A binary serving several modules is told which one by the args'
// _ansible_module_name, as Ansible sends it.
func BinaryPath(root, module, platform string) (path string, ok bool) {
	i := slices.IndexFunc(Modules, func(m Module) bool { return m.Name == module })
	if i < 0 {
		return "", false
	}
	return filepath.Join(root, "plugins", "bin", platform, Modules[i].Binary), true
}
