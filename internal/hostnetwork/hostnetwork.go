// Package hostnetwork puts the Flux controllers of a FluxInstance on the
// host network (flux_instance's host_network): what the play applies, which
// flux_repo_check compares with what Flux would apply from git.
package hostnetwork

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Before a CNI runs (k3s with flannel-backend: none, the CNI installed by
// Flux itself), every node is NotReady, tainted node.kubernetes.io/not-ready,
// and no Pod gets a network of its own. The Flux controllers can still run:
// on the host network, tolerating the taint. On the host network each
// container port is a host port, and every controller asks 8080 and 9440
// (source-controller and notification-controller 9090 too), as does the
// operator (8080, 8081, 9080): the scheduler would put one per node. So
// each controller gets ports of its own, and source-controller advertises
// its artifacts at its Pod's (the node's) address, which kustomize-controller
// reaches without cluster DNS or a Service (neither works before the CNI).

// controllerPorts are the ports each controller listens on with
// host_network: name of the container port, the flag that sets it, the port.
var controllerPorts = []struct {
	controller string
	ports      []hostPort
}{
	{"source-controller", []hostPort{{"http", "--storage-addr", 9790}, {"http-prom", "--metrics-addr", 9791}, {"healthz", "--health-addr", 9792}}},
	{"kustomize-controller", []hostPort{{"http-prom", "--metrics-addr", 9793}, {"healthz", "--health-addr", 9794}}},
	{"helm-controller", []hostPort{{"http-prom", "--metrics-addr", 9795}, {"healthz", "--health-addr", 9796}}},
	{"notification-controller", []hostPort{{"http", "--events-addr", 9797}, {"http-webhook", "--receiverAddr", 9292}, {"http-prom", "--metrics-addr", 9798}, {"healthz", "--health-addr", 9799}}},
	{"image-reflector-controller", []hostPort{{"http-prom", "--metrics-addr", 9800}, {"healthz", "--health-addr", 9801}}},
	{"image-automation-controller", []hostPort{{"http-prom", "--metrics-addr", 9802}, {"healthz", "--health-addr", 9803}}},
	{"source-watcher", []hostPort{{"http", "--storage-addr", 9804}, {"http-prom", "--metrics-addr", 9805}, {"healthz", "--health-addr", 9806}}},
}

type hostPort struct {
	name, flag string
	port       int
}

// notReadyToleration lets a Pod be scheduled on a node whose CNI is not up.
const notReadyToleration = `{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}`

// hostNetworkPatches are the spec.kustomize.patches that put every Flux
// controller on the host network (one JSON patch per controller).
func hostNetworkPatches() []any {
	patches := make([]any, 0, len(controllerPorts))
	for _, c := range controllerPorts {
		var ops []string
		add := func(path, value string) {
			ops = append(ops, fmt.Sprintf(`{"op": "add", "path": %q, "value": %s}`, path, value))
		}
		add("/spec/template/spec/hostNetwork", "true")
		add("/spec/template/spec/tolerations", "["+notReadyToleration+"]")
		var ports []string
		for _, p := range c.ports {
			ports = append(ports, fmt.Sprintf(`{"name": %q, "containerPort": %d, "protocol": "TCP"}`, p.name, p.port))
			add("/spec/template/spec/containers/0/args/-", fmt.Sprintf(`"%s=:%d"`, p.flag, p.port))
		}
		ops = append(ops, fmt.Sprintf(`{"op": "replace", "path": "/spec/template/spec/containers/0/ports", "value": [%s]}`, strings.Join(ports, ", ")))
		if c.ports[0].flag == "--storage-addr" {
			add("/spec/template/spec/containers/0/env/-", `{"name": "HOST_NETWORK_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}`)
			add("/spec/template/spec/containers/0/args/-", fmt.Sprintf(`"--storage-adv-addr=$(HOST_NETWORK_POD_IP):%d"`, c.ports[0].port))
		}
		patches = append(patches, map[string]any{
			"target": map[string]any{"kind": "Deployment", "name": c.controller},
			"patch":  "[" + strings.Join(ops, ", ") + "]",
		})
	}
	return patches
}

// Add adds the patches after the instance's own.
func Add(obj *unstructured.Unstructured) error {
	patches, _, err := unstructured.NestedSlice(obj.Object, "spec", "kustomize", "patches")
	if err != nil {
		return fmt.Errorf("spec.kustomize.patches: %w", err)
	}
	return unstructured.SetNestedSlice(obj.Object, append(patches, hostNetworkPatches()...), "spec", "kustomize", "patches")
}
