package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Embedded etcd, as far as this collection can see it: each server that
// runs etcd (cluster-init, or joined with server) is a member, kept here in
// the ConfigMap kube-system/k3s-etcd-members (name: peer URL) since the
// test bed's API server has its own etcd. k3s puts a finalizer on such a
// server's Node, and when the Node is deleted a running server removes the
// member, then the finalizer (k3s's managed-etcd-controller): deleting the
// Node object of a server is how a member leaves the cluster.
const (
	etcdMembersPath = "/api/v1/namespaces/kube-system/configmaps/k3s-etcd-members"
	etcdFinalizer   = "wrangler.cattle.io/managed-etcd-controller"
)

// etcdMember says whether this server runs an etcd member.
func etcdMember(s settings) bool {
	return s.bool("cluster-init") || s.str("server", "") != ""
}

// joinEtcd adds this server to the member list.
func joinEtcd(client *apiClientT, name, addr string) error {
	// Created by the first server; for the others (or two starting at once)
	// it exists already, which is as good.
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "k3s-etcd-members", "namespace": "kube-system"}}
	if status, body, err := client.do("POST", "/api/v1/namespaces/kube-system/configmaps", cm, "application/json"); err != nil && status != http.StatusConflict {
		return fmt.Errorf("create etcd member list: %w: %s", err, body)
	}
	patch := map[string]any{"data": map[string]any{name: "https://" + addr + ":2380"}}
	if _, body, err := client.do("PATCH", etcdMembersPath, patch, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("add etcd member %s: %w: %s", name, err, body)
	}
	return nil
}

// removeDeletedMembers runs while the server does: every deleted Node that
// still holds the finalizer loses its member, then the finalizer.
func removeDeletedMembers(client *apiClientT) {
	for {
		time.Sleep(500 * time.Millisecond)
		_, body, err := client.do("GET", "/api/v1/nodes", nil, "")
		if err != nil {
			continue
		}
		var list struct {
			Items []struct {
				Metadata struct {
					Name              string   `json:"name"`
					DeletionTimestamp string   `json:"deletionTimestamp"`
					Finalizers        []string `json:"finalizers"`
					ResourceVersion   string   `json:"resourceVersion"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if json.Unmarshal([]byte(body), &list) != nil {
			continue
		}
		for _, n := range list.Items {
			m := n.Metadata
			if m.DeletionTimestamp == "" || !slices.Contains(m.Finalizers, etcdFinalizer) {
				continue
			}
			if _, _, err := client.do("PATCH", etcdMembersPath, map[string]any{"data": map[string]any{m.Name: nil}}, "application/merge-patch+json"); err != nil {
				continue
			}
			rest := slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == etcdFinalizer })
			patch := map[string]any{"metadata": map[string]any{"finalizers": rest, "resourceVersion": m.ResourceVersion}}
			_, _, _ = client.do("PATCH", "/api/v1/nodes/"+m.Name, patch, "application/merge-patch+json")
		}
	}
}

// etcdWALDir is where a server keeps its etcd write-ahead log; k3s takes
// etcd as initialised on this host when it exists (pkg/etcd/etcd.go
// walDir, IsInitialized), as `k3s etcd-snapshot save` asks first.
func etcdWALDir(dataDir string) string {
	return filepath.Join(dataDir, "server", "db", "etcd", "member", "wal")
}

// initEtcdDataDir makes the server's etcd data directory, as etcd does on
// its first start.
func initEtcdDataDir(dataDir string) error {
	return os.MkdirAll(etcdWALDir(dataDir), 0o700)
}
