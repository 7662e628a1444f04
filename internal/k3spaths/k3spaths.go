// Package k3spaths is where k3s keeps its files by default, in one place
// for the node modules (no dependencies: k3s_config's binary stays small).
package k3spaths

import (
	"os"
	"strings"
)

const (
	// BinDir is where k3s's install script puts k3s.
	BinDir = "/usr/local/bin"
	// DataDir is k3s's data directory (--data-dir).
	DataDir = "/var/lib/rancher/k3s"
	// Config is the config file k3s reads.
	Config = "/etc/rancher/k3s/config.yaml"
	// Kubeconfig is the admin kubeconfig a server writes.
	Kubeconfig = "/etc/rancher/k3s/k3s.yaml"
	// NodeID is where k3s keeps the suffix with-node-id adds to the node
	// name, made at its first start with that flag.
	NodeID = "/etc/rancher/node/id"
	// UnitDir is where the install script puts the systemd units.
	UnitDir = "/etc/systemd/system"
)

// ReadNodeID is the id in the file at path (NodeID), "" when there is none.
func ReadNodeID(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}
