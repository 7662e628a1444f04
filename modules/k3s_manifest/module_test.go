package k3smanifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"name": "kube-vip", "content": configMap}))
}

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\n  namespace: kube-system\n"

func TestObjects(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string
		err           string
	}{
		{name: "namespaced and cluster-wide, empty documents skipped", content: "---\n" + configMap + "---\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n",
			want: []string{"ConfigMap/kube-system/info", "ClusterRole/r"}},
		{name: "no kind", content: configMap + "---\napiVersion: v1\nmetadata:\n  name: x\n", err: "document 2 has no apiVersion, kind or metadata.name"},
		{name: "not YAML", content: "a: [", err: "document 1 is not YAML"},
		{name: "a list, not an object", content: "- a\n", err: "document 1 is not YAML"},
		{name: "nothing", content: "---\n", err: "no object in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := manifestObjects(tc.content)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server", "manifests", "info.yaml")
	run := func(args map[string]any) map[string]any {
		args["data_dir"], args["_ansible_diff"] = dir, true
		if args["name"] == nil {
			args["name"] = "info"
		}
		res, _, _ := ansibletest.Run(t, module, run, args)
		return res
	}
	res := run(map[string]any{"content": configMap, "_ansible_check_mode": true})
	assert.Equal(t, true, res["changed"])
	assert.NoFileExists(t, path, "check mode writes nothing")
	assert.Equal(t, configMap, res["diff"].(map[string]any)["after"])

	res = run(map[string]any{"content": configMap})
	assert.Equal(t, true, res["changed"], res["msg"])
	assert.Equal(t, []any{"ConfigMap/kube-system/info"}, res["objects"])
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	res = run(map[string]any{"content": configMap})
	assert.Equal(t, false, res["changed"], "idempotent")

	res = run(map[string]any{"content": "apiVersion: v1\nkind: ConfigMap\n"})
	assert.Equal(t, true, res["failed"])
	assert.Equal(t, "content: document 1 has no apiVersion, kind or metadata.name", res["msg"])
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, configMap, string(raw), "bad input changes nothing")

	res = run(map[string]any{"state": "absent"})
	assert.Equal(t, true, res["changed"])
	assert.NoFileExists(t, path)
	res = run(map[string]any{"state": "absent"})
	assert.Equal(t, false, res["changed"])

	res = run(map[string]any{"content": configMap, "name": "../etc"})
	assert.Equal(t, `name must be lowercase letters, digits and '-', at most 63 characters, got "../etc"`, res["msg"])
}
