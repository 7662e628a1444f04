package registry

import (
	"fmt"
	"slices"
	"strings"
)

// generated heads every file rendered here.
const generated = "Generated from internal/registry by `make docs`; registry_test.go checks it. Do not edit."

// Makefile is modules.mk, the lists the Makefile builds and links from.
func Makefile() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", generated)
	b.WriteString("# Node binaries: copied to the hosts, small, for every CPU of a homelab's nodes.\n")
	fmt.Fprintf(&b, "NODE_MODULES := %s\n", strings.Join(BinariesRunning(Node), " "))
	node, _ := BinaryNamed("k3s_node")
	fmt.Fprintf(&b, "NODE_PLATFORMS := %s\n", strings.Join(node.Platforms, " "))
	b.WriteString("# The controller binary, which serves every controller-side module.\n")
	controller, _ := BinaryNamed(ControllerBinary)
	fmt.Fprintf(&b, "CONTROLLER_PLATFORMS := %s\n", strings.Join(controller.Platforms, " "))
	return b.String()
}

// Python is plugins/plugin_utils/registry.py: the binary of each module
// name an action plugin is asked for, aliases included.
func Python() string {
	var b strings.Builder
	b.WriteString("# Copyright: gitops.k3s_flux contributors\n")
	b.WriteString("# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)\n")
	fmt.Fprintf(&b, "# %s\n", generated)
	b.WriteString("\"\"\"The binary that serves each module of gitops.k3s_flux.\"\"\"\n\n")
	b.WriteString("from __future__ import annotations\n\n")
	fmt.Fprintf(&b, "CONTROLLER = %q\n\n", ControllerBinary)
	b.WriteString("BINARY = {\n")
	type pair struct{ name, binary string }
	var pairs []pair
	for _, m := range Modules {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			pairs = append(pairs, pair{n, m.Binary})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	for _, p := range pairs {
		fmt.Fprintf(&b, "    %q: %q,\n", p.name, p.binary)
	}
	b.WriteString("}\n")
	return b.String()
}

// RuntimeYAML is meta/runtime.yml: the action groups and the aliases'
// redirects.
func RuntimeYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\n# %s\n", generated)
	b.WriteString("requires_ansible: \">=2.14.0\"\n")
	b.WriteString("# module_defaults can set kubeconfig once for every cluster module:\n")
	b.WriteString("#   module_defaults:\n#     group/gitops.k3s_flux.cluster:\n")
	b.WriteString("#       kubeconfig: \"{{ playbook_dir }}/../.generated/kubeconfig\"\n")
	b.WriteString("action_groups:\n")
	groups := map[string][]string{}
	var names []string
	for _, m := range Modules {
		if m.Group == "" {
			continue
		}
		if _, ok := groups[m.Group]; !ok {
			names = append(names, m.Group)
		}
		groups[m.Group] = append(groups[m.Group], m.Name)
	}
	slices.Sort(names)
	for _, g := range names {
		fmt.Fprintf(&b, "  %s:\n", g)
		for _, m := range groups[g] {
			fmt.Fprintf(&b, "    - %s\n", m)
		}
	}
	b.WriteString("# Read-only modules are info modules (Ansible's naming convention); the names they had before\n")
	b.WriteString("# 0.1.0 still work.\n")
	b.WriteString("plugin_routing:\n")
	for _, kind := range []string{"modules", "action"} {
		fmt.Fprintf(&b, "  %s:\n", kind)
		for _, m := range Modules {
			for _, alias := range m.Aliases {
				fmt.Fprintf(&b, "    %s:\n      redirect: gitops.k3s_flux.%s\n", alias, m.Name)
			}
		}
	}
	return b.String()
}
