// Package k8s is where tests/tools/build.sh downloads the modules whose files it copies (k3s's
// source, which the bed's k3s and its Kubernetes control plane are built from; kwok's stages).
// It requires nothing: the builds use k3s's own go.mod. Test tools only.
package k8s
