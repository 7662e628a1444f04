package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Node passwords, as k3s keeps them: an agent makes a random password once
// and keeps it in /etc/rancher/node/password (pkg/agent/config/config.go,
// ensureNodePassword; the uninstall script leaves /etc/rancher/node), and
// sends it with its node name when it asks its server for the kubelet's
// certificates (getNodeNamedCrt). The server keeps a hash per node name in
// the Secret kube-system/<name>.node-password.k3s, made at the first
// request and compared at every later one (pkg/nodepassword, Ensure and
// GetNodeAuthValidator): another password is refused with 403, and the
// agent, which cannot go on without the certificates, asks again every
// 5 s for ever (config.go, Get). The Secret belongs to the Node
// (pkg/nodepassword/controller.go, onChangeNode adds the owner reference),
// so deleting the Node deletes it, and the host can join again.
const (
	nodePasswordFile      = "/etc/rancher/node/password"
	nodePasswordNamespace = "kube-system"
	nodePasswordType      = "k3s.cattle.io/node-password"
	nodePasswordRetry     = 5 * time.Second
)

var errNodePasswordMismatch = errors.New("node password does not match")

// nodePasswordSecret is the Secret's name (getSecretName).
func nodePasswordSecret(node string) string {
	return strings.ToLower(node + ".node-password.k3s")
}

// ensureNodePassword returns this host's node password, made on first use.
func ensureNodePassword() (string, error) {
	if raw, err := os.ReadFile(nodePasswordFile); err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(randReader, b); err != nil {
		return "", err
	}
	password := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(nodePasswordFile), 0o755); err != nil {
		return "", err
	}
	return password, os.WriteFile(nodePasswordFile, []byte(password+"\n"), 0o600)
}

// hashNodePassword stands in for k3s's scrypt hash
// (pkg/authenticator/hash): salted, so equal passwords hash apart.
func hashNodePassword(password, salt string) string {
	sum := sha256.Sum256([]byte(salt + ":" + password))
	return "$standin$" + salt + "$" + hex.EncodeToString(sum[:])
}

func verifyNodePassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 4 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashNodePassword(password, parts[2])), []byte(hash)) == 1
}

// checkNodePassword is the server's side (Ensure): the node's Secret is
// made when there is none, else its hash must match.
func checkNodePassword(client *apiClientT, node, password string) error {
	path := "/api/v1/namespaces/" + nodePasswordNamespace + "/secrets/" + nodePasswordSecret(node)
	for attempt := 0; attempt < 2; attempt++ {
		status, body, err := client.do("GET", path, nil, "")
		if err != nil {
			return err
		}
		if status == http.StatusOK {
			var secret struct {
				Data map[string]string `json:"data"`
			}
			if err := json.Unmarshal([]byte(body), &secret); err != nil {
				return err
			}
			hash, _ := base64.StdEncoding.DecodeString(secret.Data["hash"])
			if !verifyNodePassword(string(hash), password) {
				return fmt.Errorf("unable to verify hash for node '%s': %w", node, errNodePasswordMismatch)
			}
			return nil
		}
		salt := make([]byte, 8)
		_, _ = io.ReadFull(randReader, salt)
		secret := map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": nodePasswordType, "immutable": true,
			"metadata": map[string]any{"name": nodePasswordSecret(node), "namespace": nodePasswordNamespace},
			"data":     map[string]any{"hash": base64.StdEncoding.EncodeToString([]byte(hashNodePassword(password, hex.EncodeToString(salt))))},
		}
		status, body, err = client.do("POST", "/api/v1/namespaces/"+nodePasswordNamespace+"/secrets", secret, "application/json")
		if status == http.StatusConflict {
			continue // made meanwhile by another request: compare with it
		}
		if err != nil {
			return fmt.Errorf("create %s: %w: %s", nodePasswordSecret(node), err, body)
		}
		return nil
	}
	return fmt.Errorf("secret %s changed while it was read", nodePasswordSecret(node))
}

// servingKubeletCert is the server's /v1-k3s/serving-kubelet.crt: the
// token (basic auth), then the node's name and password (headers). A
// failure to reach the datastore lets the node in, as k3s does
// (verifyRemotePassword); only a wrong password is refused.
func servingKubeletCert(token string, bed bedInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(token)) != 1 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		node, password := strings.ToLower(r.Header.Get("K3s-Node-Name")), r.Header.Get("K3s-Node-Password")
		if node == "" || password == "" {
			http.Error(w, "node name or password not set", http.StatusBadRequest)
			return
		}
		client, err := apiClient(bed)
		if err == nil {
			err = checkNodePassword(client, node, password)
		}
		if errors.Is(err, errNodePasswordMismatch) {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "time=%q level=info msg=%q\n", time.Now().Format(time.RFC3339), "Password verification deferred for node "+node+": "+err.Error())
		}
		_, _ = w.Write([]byte("stand-in kubelet serving certificate\n"))
	}
}

// requestServingCert is the agent's side (getNodeNamedCrt): refused
// with 403, it says what k3s says.
func requestServingCert(j joined, node string) error {
	password, err := ensureNodePassword()
	if err != nil {
		return err
	}
	req, _ := http.NewRequest("GET", j.server+"/v1-k3s/serving-kubelet.crt", nil)
	req.SetBasicAuth("node", j.password)
	req.Header.Set("K3s-Node-Name", node)
	req.Header.Set("K3s-Node-Password", password)
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusForbidden:
		return fmt.Errorf("Node password rejected, duplicate hostname or contents of '%s' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag", nodePasswordFile)
	default:
		return fmt.Errorf("%s/v1-k3s/serving-kubelet.crt: %s", j.server, resp.Status)
	}
}

// ownNodePassword makes the Node the owner of its password Secret
// (onChangeNode), so the garbage collector deletes the Secret with the Node.
func ownNodePassword(client *apiClientT, node string) error {
	_, body, err := client.do("GET", "/api/v1/nodes/"+node, nil, "")
	if err != nil {
		return err
	}
	var n struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &n); err != nil || n.Metadata.UID == "" {
		return fmt.Errorf("read node %s: %v", node, err)
	}
	patch := map[string]any{"metadata": map[string]any{"ownerReferences": []map[string]any{{"apiVersion": "v1", "kind": "Node", "name": node, "uid": n.Metadata.UID}}}}
	if _, body, err := client.do("PATCH", "/api/v1/namespaces/"+nodePasswordNamespace+"/secrets/"+nodePasswordSecret(node), patch, "application/merge-patch+json"); err != nil {
		return fmt.Errorf("own %s: %w: %s", nodePasswordSecret(node), err, body)
	}
	return nil
}
