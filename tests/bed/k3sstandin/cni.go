package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"
)

// With flannel-backend: none, k3s runs no CNI: its kubelet reports the Node
// NotReady ("container runtime network not ready ... NetworkPluginNotReady:
// cni plugin not initialized") until a CNI installed later (Cilium, say,
// by Flux) writes its config on the node. The stand-in models that: the
// Node carries cniPendingAnnotation, for which the test bed's kwok stages
// write that Ready=False condition, until a Ready Pod of the CNI's
// DaemonSet (label cniPodLabel, as Cilium's agent has) runs on the node;
// then the annotation goes and kwok makes the Node Ready.
const (
	cniPendingAnnotation = "standin.k3s.io/cni"
	cniPodLabel          = "k8s-app=cilium"
)

// noFlannel tells whether this node runs without k3s's flannel: a
// server from its own flag; an agent, as k3s agents learn it from their
// server, from the server Nodes' k3s.io/node-args.
func noFlannel(s settings, role string, client *apiClientT) bool {
	if role == "server" {
		return s.str("flannel-backend", "vxlan") == "none"
	}
	_, body, err := client.do("GET", "/api/v1/nodes?labelSelector="+url.QueryEscape("node-role.kubernetes.io/control-plane=true"), nil, "")
	if err != nil {
		return false
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(body), &list) != nil {
		return false
	}
	for _, n := range list.Items {
		var args []string
		if json.Unmarshal([]byte(n.Metadata.Annotations["k3s.io/node-args"]), &args) != nil {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--flannel-backend" && args[i+1] == "none" {
				return true
			}
		}
	}
	return false
}

type condition struct{ Type, Status string }

// cniReady tells whether a Ready Pod of the CNI runs on the node.
func cniReady(client *apiClientT, node string) bool {
	q := url.Values{"fieldSelector": {"spec.nodeName=" + node}, "labelSelector": {cniPodLabel}}
	_, body, err := client.do("GET", "/api/v1/pods?"+q.Encode(), nil, "")
	if err != nil {
		return false
	}
	var list struct {
		Items []struct {
			Status struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(body), &list) != nil {
		return false
	}
	for _, p := range list.Items {
		if slices.Contains(p.Status.Conditions, condition{"Ready", "True"}) {
			return true
		}
	}
	return false
}

// awaitCNI clears the Node's pending mark once the CNI's Pod is Ready on
// it, as the kubelet turns Ready once the CNI wrote its config.
func awaitCNI(client *apiClientT, node string) {
	for !cniReady(client, node) {
		time.Sleep(time.Second)
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{cniPendingAnnotation: nil}}}
	for {
		_, body, err := client.do("PATCH", "/api/v1/nodes/"+node, patch, "application/merge-patch+json")
		if err == nil {
			fmt.Fprintf(os.Stderr, "k3s stand-in: the CNI is Ready on %s\n", node)
			return
		}
		fmt.Fprintf(os.Stderr, "k3s stand-in: clear %s on %s: %v: %s\n", cniPendingAnnotation, node, err, body)
		time.Sleep(time.Second)
	}
}
