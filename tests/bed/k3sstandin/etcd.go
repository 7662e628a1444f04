package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// etcdPeerPort is where an etcd member listens for its peers; the
// stand-in listens there too, so that a member can be told running.
const etcdPeerPort = "2380"

// memberName is this server's etcd member name, <node>-<8 hex>, made at its
// first start and kept in the data dir (pkg/etcd/etcd.go, setName). fresh:
// the data dir holds no etcd yet (no WAL: IsInitialized), so the server
// starts a cluster or joins one, as a failed join's retry does too.
func memberName(dataDir, node string) (name string, fresh bool, err error) {
	_, statErr := os.Stat(etcdWALDir(dataDir))
	fresh = errors.Is(statErr, os.ErrNotExist)
	path := filepath.Join(dataDir, "server", "db", "etcd", "name")
	if raw, err := os.ReadFile(path); err == nil && len(raw) > 0 {
		return string(raw), fresh, nil
	}
	b := make([]byte, 4)
	if _, err := randReader.Read(b); err != nil {
		return "", false, err
	}
	name = fmt.Sprintf("%s-%x", node, b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, err
	}
	return name, fresh, os.WriteFile(path, []byte(name), 0o600)
}

// member is one entry of the modelled member list: "<member name> <peer URL>".
func member(value string) (name, peer string) {
	name, peer, _ = strings.Cut(value, " ")
	return name, peer
}

// joinEtcd adds this server (node, its member name, its address) to the
// member list as k3s does at start (pkg/etcd/etcd.go): a server that
// starts a new cluster (cluster-init on a data dir without etcd) while
// members of the cluster run would start a second cluster, which the test
// bed's one API server cannot hold: refused (real k3s starts it, and the
// cluster is split in two); a server joining with a member name other than
// the one the list has for its node name fails as k3s's join does.
func joinEtcd(client *apiClientT, s settings, node, name, addr string, fresh bool) error {
	// Created by the first server; for the others (or two starting at once)
	// it exists already, which is as good.
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "k3s-etcd-members", "namespace": "kube-system"}}
	if status, body, err := client.do("POST", "/api/v1/namespaces/kube-system/configmaps", cm, "application/json"); err != nil && status != http.StatusConflict {
		return fmt.Errorf("create etcd member list: %w: %s", err, body)
	}
	members, err := readMembers(client)
	if err != nil {
		return err
	}
	data := map[string]any{node: name + " https://" + addr + ":" + etcdPeerPort}
	switch {
	case fresh && s.str("server", "") == "":
		var running []string
		for other, v := range members {
			if _, peer := member(v); other != node && peerAnswers(peer) {
				running = append(running, other)
			}
		}
		if len(running) > 0 {
			slices.Sort(running)
			return fmt.Errorf("k3s stand-in: cluster-init on a data dir without etcd would start a new etcd cluster while the members %s of the cluster run: real k3s starts it, splitting the cluster in two; join one of them with server instead", strings.Join(running, ", "))
		}
		// A new cluster: the old one's members are gone with it.
		for other := range members {
			if other != node {
				data[other] = nil
			}
		}
	case fresh:
		if old, ok := members[node]; ok {
			if oldName, _ := member(old); oldName != name {
				return errors.New("etcd cluster join failed: duplicate node name found, please use a unique name for this node")
			}
		}
	}
	if _, body, err := client.do("PATCH", etcdMembersPath, map[string]any{"data": data}, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("add etcd member %s: %w: %s", node, err, body)
	}
	return nil
}

// peerAnswers tells whether a member listens at its peer URL.
func peerAnswers(peer string) bool {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(peer, "https://"), time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// listenPeer accepts on the peer port while the server runs.
func listenPeer(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, etcdPeerPort))
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l, nil
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
