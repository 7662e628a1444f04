package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// kwokAnnotation hands the Node to kwok, which plays its kubelet.
const kwokAnnotation = "kwok.x-k8s.io/node"

// nodeIDFile is where k3s keeps the suffix with-node-id adds, across
// reinstalls (its uninstall script leaves /etc/rancher/node).
const nodeIDFile = "/etc/rancher/node/id"

// nodeName is node-name, else the hostname, with a suffix when
// with-node-id is set, as k3s names nodes.
func nodeName(s settings) (string, error) {
	name := s.str("node-name", "")
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", err
		}
		name = h
	}
	if s.bool("with-node-id") {
		id, err := os.ReadFile(nodeIDFile)
		if err != nil {
			b := make([]byte, 4)
			_, _ = io.ReadFull(randReader, b)
			id = []byte(fmt.Sprintf("%x\n", b))
			_ = os.MkdirAll(filepath.Dir(nodeIDFile), 0o755)
			_ = os.WriteFile(nodeIDFile, id, 0o644)
		}
		name += "-" + strings.TrimSpace(string(id))
	}
	return strings.ToLower(name), nil
}

// nodeIdentity is the name the node registers under and its address.
func nodeIdentity(s settings) (name, addr string, err error) {
	if name, err = nodeName(s); err != nil {
		return "", "", err
	}
	addr, err = nodeAddress(s)
	return name, addr, err
}

// nodeAddress is the first node-ip, else the host's first IPv4 address.
func nodeAddress(s settings) (string, error) {
	if ips := s["node-ip"]; len(ips) > 0 {
		return ips[0], nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", errors.New("no IPv4 address on this host")
}

// registerNode creates the Node or, on a restart, updates its labels,
// taints and addresses to what the config now says. Without flannel and
// until the CNI runs on it, the Node is marked for kwok to keep NotReady
// (cni.go), and a goroutine clears the mark once the CNI is Ready.
func registerNode(s settings, bed bedInfo, role, name, addr string) error {
	labels := map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		"node.kubernetes.io/instance-type": "k3s", "k3s.io/hostname": name, "k3s.io/internal-ip": addr,
	}
	if role == "server" {
		labels["node-role.kubernetes.io/control-plane"] = "true"
		labels["node-role.kubernetes.io/master"] = "true"
		if etcdMember(s) {
			labels["node-role.kubernetes.io/etcd"] = "true"
		}
	}
	for _, l := range s["node-label"] {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	taints := []map[string]string{}
	for _, t := range s["node-taint"] {
		kv, effect, _ := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		taints = append(taints, map[string]string{"key": k, "value": v, "effect": effect})
	}
	addresses := []map[string]string{{"type": "InternalIP", "address": addr}, {"type": "Hostname", "address": name}}
	for _, ip := range s["node-external-ip"] {
		addresses = append(addresses, map[string]string{"type": "ExternalIP", "address": ip})
	}
	nodeArgs, _ := json.Marshal(maskedArgs(s))
	client, err := apiClient(bed)
	if err != nil {
		return err
	}
	annotations := map[string]any{kwokAnnotation: "fake", "k3s.io/node-args": string(nodeArgs), "k3s.io/standin": "true", cniPendingAnnotation: nil}
	pending := noFlannel(s, role, client) && !cniReady(client, name)
	if pending {
		annotations[cniPendingAnnotation] = "pending"
	}
	// The kubelet reports the version k3s was installed as (kwok keeps it),
	// so an upgrade shows on the Node once the new version restarted.
	version := installedVersion()
	nodeInfo := map[string]any{"kubeletVersion": version, "kubeProxyVersion": version, "containerRuntimeVersion": "containerd://2.1.5-k3s1"}
	metadata := map[string]any{"name": name, "labels": labels, "annotations": annotations}
	if role == "server" && etcdMember(s) {
		metadata["finalizers"] = []string{etcdFinalizer}
	}
	node := map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": metadata,
		"spec":     map[string]any{"taints": taints},
		// On create the status is kept, so kwok finds the addresses
		// already there and does not put in its own.
		"status": map[string]any{"addresses": addresses, "nodeInfo": nodeInfo},
	}
	status, _, err := client.do("GET", "/api/v1/nodes/"+name, nil, "")
	if err != nil {
		return err
	}
	if status == http.StatusNotFound {
		if !pending {
			delete(annotations, cniPendingAnnotation) // a create takes no null
		}
		if _, body, err := client.do("POST", "/api/v1/nodes", node, "application/json"); err != nil {
			return fmt.Errorf("register node %s: %w: %s", name, err, body)
		}
	} else if _, body, err := client.do("PATCH", "/api/v1/nodes/"+name, node, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("update node %s: %w: %s", name, err, body)
	}
	patch := map[string]any{"status": map[string]any{"addresses": addresses, "nodeInfo": nodeInfo}}
	if _, body, err := client.do("PATCH", "/api/v1/nodes/"+name+"/status", patch, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("set addresses of node %s: %w: %s", name, err, body)
	}
	if pending {
		go awaitCNI(client, name)
	}
	return nil
}

// maskedArgs is the k3s.io/node-args annotation: the flags, tokens masked.
func maskedArgs(s settings) []string {
	var out []string
	for k, vals := range s {
		for _, v := range vals {
			if k == "token" || k == "agent-token" {
				v = "********"
			}
			out = append(out, "--"+k, v)
		}
	}
	return out
}

type apiClientT struct {
	base string
	http *http.Client
}

// apiClient talks to the test bed's API server with the admin certificate.
func apiClient(bed bedInfo) (*apiClientT, error) {
	cfg, err := pki.AdminTLSConfig(bed.PKIDir)
	if err != nil {
		return nil, err
	}
	return &apiClientT{base: bed.APIServer, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}}, nil
}

// do sends a request; err is set for transport errors and statuses >= 400
// other than 404.
func (c *apiClientT) do(method, path string, body any, contentType string) (int, string, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return 0, "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotFound {
		return resp.StatusCode, string(out), fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return resp.StatusCode, string(out), nil
}
