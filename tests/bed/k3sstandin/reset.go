package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// What an etcd snapshot holds here: the test bed has one real etcd, behind
// its API server, which the stand-in cannot roll back; a snapshot keeps the
// cluster's ConfigMaps outside kube-system instead (kube-system holds the
// stand-in's own state), and a restore brings exactly those back to it.

// configMapRecord is one ConfigMap of a snapshot.
type configMapRecord struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Data      map[string]string `json:"data,omitempty"`
}

// snapshotDoc is a stand-in snapshot file's content.
type snapshotDoc struct {
	Snapshot   string            `json:"standin_etcd_snapshot"`
	Node       string            `json:"node"`
	Time       string            `json:"time"`
	ConfigMaps []configMapRecord `json:"configmaps"`
	// Bootstrap is the key of the cluster's bootstrap data, as etcd's
	// keyspace in a k3s snapshot holds it: /bootstrap/<12 hex digits of
	// the sha256 of the token's password> (pkg/cluster/encrypt.go,
	// keyHash).
	Bootstrap string `json:"bootstrap_key"`
}

// bootstrapKey is k3s's key for the bootstrap data a token encrypts.
func bootstrapKey(token string) string {
	sum := sha256.Sum256([]byte(secretOf(token)))
	return "/bootstrap/" + hex.EncodeToString(sum[:])[:12]
}

// clusterToken is the token a server's k3s runs with: the flag (or
// config), else its server/token.
func clusterToken(s settings, dataDir string) string {
	if t := s.str("token", ""); t != "" {
		return t
	}
	raw, _ := os.ReadFile(filepath.Join(dataDir, "server", "token"))
	return strings.TrimSpace(string(raw))
}

// liveConfigMaps reads the ConfigMaps a snapshot keeps from the test bed's
// API server.
var liveConfigMaps = func() ([]configMapRecord, error) {
	bed, err := readBed()
	if err != nil {
		return nil, err
	}
	client, err := apiClient(bed)
	if err != nil {
		return nil, err
	}
	return listConfigMaps(client)
}

func listConfigMaps(client *apiClientT) ([]configMapRecord, error) {
	_, body, err := client.do("GET", "/api/v1/configmaps", nil, "")
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps: %w: %s", err, body)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Name      string            `json:"name"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return nil, err
	}
	var out []configMapRecord
	for _, i := range list.Items {
		if i.Metadata.Namespace == "kube-system" || i.Metadata.Name == "kube-root-ca.crt" {
			continue // the stand-in's own, and the one the controller-manager puts everywhere
		}
		out = append(out, configMapRecord{Namespace: i.Metadata.Namespace, Name: i.Metadata.Name, Labels: i.Metadata.Labels, Data: i.Data})
	}
	return out, nil
}

// clusterReset is `k3s server --cluster-reset [--cluster-reset-restore-path]`
// (pkg/etcd/etcd.go, Reset): with k3s stopped on this host, the snapshot
// restored, this server made the only etcd member; then k3s exits 0 saying
// to restart without the flag and to set the others' server/db aside.
func clusterReset(s settings, bed bedInfo) error {
	dataDir := s.str("data-dir", defaultDataDir)
	name, addr, err := nodeIdentity(s)
	if err != nil {
		return err
	}
	// This host's k3s still running holds its ports.
	if peerAnswers("https://" + net.JoinHostPort(addr, etcdPeerPort)) {
		return fmt.Errorf("listen tcp %s: bind: address already in use", net.JoinHostPort(addr, etcdPeerPort))
	}
	client, err := apiClient(bed)
	if err != nil {
		return err
	}
	members, err := readMembers(client)
	if err != nil {
		return err
	}
	var running []string
	for other, v := range members {
		if _, peer := member(v); other != name && peerAnswers(peer) {
			running = append(running, other)
		}
	}
	if len(running) > 0 {
		slices.Sort(running)
		return fmt.Errorf("k3s stand-in: cluster-reset while the members %s run: stop k3s on every server first, as k3s documents (they would go on as a cluster of their own)", strings.Join(running, ", "))
	}
	if path := s.str("cluster-reset-restore-path", ""); path != "" {
		if err := restoreSnapshot(client, path, dataDir, clusterToken(s, dataDir)); err != nil {
			return err
		}
	}
	memberName, _, err := memberName(dataDir, name)
	if err != nil {
		return err
	}
	data := map[string]any{name: memberName + " https://" + addr + ":" + etcdPeerPort}
	for other := range members {
		if other != name {
			data[other] = nil
		}
	}
	if _, body, err := client.do("PATCH", etcdMembersPath, map[string]any{"data": data}, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("reset etcd members: %w: %s", err, body)
	}
	if err := initEtcdDataDir(dataDir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "time=%q level=info msg=%q\n", time.Now().Format(time.RFC3339),
		"Managed etcd cluster membership has been reset, restart without --cluster-reset flag now. Backup and delete ${datadir}/server/db on each peer etcd server and rejoin the nodes")
	return nil
}

func readMembers(client *apiClientT) (map[string]string, error) {
	status, body, err := client.do("GET", etcdMembersPath, nil, "")
	if status == http.StatusNotFound {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read etcd member list: %w: %s", err, body)
	}
	var list struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return nil, fmt.Errorf("read etcd member list: %w", err)
	}
	return list.Data, nil
}

// restoreSnapshot is k3s's Restore (pkg/etcd/etcd.go): the snapshot found
// (and unzipped), the etcd data moved to server/db/etcd-old-<unix time>,
// then etcd's restore of the file; here that brings the ConfigMaps back to
// the snapshot's: each created or replaced, any other (outside
// kube-system) deleted.
func restoreSnapshot(client *apiClientT, path, dataDir, token string) error {
	raw, err := readSnapshotFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("etcd: snapshot path does not exist: %s", path)
	}
	if err != nil {
		return err
	}
	etcd := filepath.Join(dataDir, "server", "db", "etcd")
	if err := os.Rename(etcd, fmt.Sprintf("%s-old-%d", etcd, time.Now().Unix())); err != nil {
		return err
	}
	payload, err := restoredPayload(raw)
	if err != nil {
		return err
	}
	var doc snapshotDoc
	if err := json.Unmarshal(payload, &doc); err != nil || doc.Snapshot == "" {
		return fmt.Errorf("%s is not an etcd snapshot", path)
	}
	// As k3s's rebootstrap after the restore (pkg/etcd/etcd.go, Reset;
	// pkg/cluster/storage.go, getBootstrapKeyFromStorage): the data is
	// replaced already when k3s finds no bootstrap data for its token.
	if doc.Bootstrap != "" && doc.Bootstrap != bootstrapKey(token) {
		return errors.New("bootstrap data already found and encrypted with different token")
	}
	now, err := listConfigMaps(client)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, c := range doc.ConfigMaps {
		keep[c.Namespace+"/"+c.Name] = true
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": c.Data,
			"metadata": map[string]any{"name": c.Name, "namespace": c.Namespace, "labels": c.Labels}}
		base := "/api/v1/namespaces/" + c.Namespace + "/configmaps"
		status, body, err := client.do("POST", base, obj, "application/json")
		if status == http.StatusConflict {
			_, body, err = client.do("PUT", base+"/"+c.Name, obj, "application/json")
		}
		if err != nil {
			return fmt.Errorf("restore ConfigMap %s/%s: %w: %s", c.Namespace, c.Name, err, body)
		}
	}
	for _, c := range now {
		if !keep[c.Namespace+"/"+c.Name] {
			if status, body, err := client.do("DELETE", "/api/v1/namespaces/"+c.Namespace+"/configmaps/"+c.Name, nil, ""); err != nil && status != http.StatusNotFound {
				return fmt.Errorf("restore: delete ConfigMap %s/%s: %w: %s", c.Namespace, c.Name, err, body)
			}
		}
	}
	return nil
}

// readSnapshotFile reads a snapshot, unzipping one k3s compressed.
func readSnapshotFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".zip") {
		return raw, err
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, err
	}
	if len(zr.File) != 1 {
		return nil, fmt.Errorf("%s: a compressed snapshot holds one file", path)
	}
	f, err := zr.File[0].Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
