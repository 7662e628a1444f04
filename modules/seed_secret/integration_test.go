//go:build integration

package seedsecret

import (
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestSeedSecretAgainstAPIServer runs the module against the test bed's
// real kube-apiserver.
func TestSeedSecretAgainstAPIServer(t *testing.T) {
	b := bed.Start(t, bed.Options{Name: "k3sfs", Subnet: "10.213.4"})
	ctx := t.Context()
	kc, _, err := b.Clients()
	require.NoError(t, err)

	deployKey := newDeployKey(t, "")
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	ageKey := id.String()
	const clientSecret = "infisical-client-secret-7f3a9c"
	secrets := []string{deployKey, ageKey, clientSecret, "rotated-secret-2b8e"}
	var outputs []string
	runSeed := func(args map[string]any) (map[string]any, int) {
		t.Helper()
		args["kubeconfig"] = b.Kubeconfig
		res, code, raw := ansibletest.Run(t, module, kube.With(run, kube.Connect), args)
		outputs = append(outputs, raw)
		return res, code
	}
	seed := func(infisicalSecret string) map[string]any {
		return map[string]any{
			"namespaces": []any{"flux-system", "platform"},
			"secrets": []any{
				map[string]any{"name": "git-deploy-key", "namespace": "flux-system", "git_deploy_key": map[string]any{"private_key": deployKey}},
				map[string]any{"name": "sops-age", "namespace": "flux-system", "age_key": map[string]any{"key": ageKey}},
				map[string]any{"name": "infisical-universal-auth", "namespace": "platform", "string_data": map[string]any{"clientId": "id-1", "clientSecret": infisicalSecret}},
			},
		}
	}
	versions := func() map[string]string {
		out := map[string]string{}
		for _, s := range [][2]string{{"flux-system", "git-deploy-key"}, {"flux-system", "sops-age"}, {"platform", "infisical-universal-auth"}} {
			sec, err := kc.CoreV1().Secrets(s[0]).Get(ctx, s[1], metav1.GetOptions{})
			require.NoError(t, err)
			out[s[1]] = sec.ResourceVersion
		}
		return out
	}

	t.Run("check mode on an empty cluster creates nothing", func(t *testing.T) {
		args := seed(clientSecret)
		args["_ansible_check_mode"] = true
		res, code := runSeed(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		_, err := kc.CoreV1().Namespaces().Get(ctx, "platform", metav1.GetOptions{})
		assert.Error(t, err, "no namespace created")
	})

	t.Run("creates namespaces and secrets", func(t *testing.T) {
		res, code := runSeed(seed(clientSecret))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		ns, err := kc.CoreV1().Namespaces().Get(ctx, "platform", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, ns.Annotations, "name only: nothing for Flux to fight over")
		sec, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "git-deploy-key", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, deployKey, string(sec.Data["identity"]))
		assert.Equal(t, 3, strings.Count(string(sec.Data["known_hosts"]), "github.com "))
		age, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "sops-age", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, ageKey+"\n", string(age.Data["age.agekey"]))
	})

	t.Run("a second run changes nothing and writes nothing", func(t *testing.T) {
		before := versions()
		start := time.Now()
		res, code := runSeed(seed(clientSecret))
		require.Equal(t, 0, code, res["msg"])
		t.Logf("seed_secret no-op run: %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, before, versions())
	})

	t.Run("a rotated value shows in the diff as changed, with nothing derived from it", func(t *testing.T) {
		args := seed("rotated-secret-2b8e")
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		res, code := runSeed(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		diff := res["diff"].(map[string]any)
		assert.Equal(t, "secret/platform/infisical-universal-auth", diff["before_header"])
		assert.Contains(t, diff["before"], "  clientSecret: <redacted>\n")
		assert.Contains(t, diff["after"], "  clientSecret: <redacted, changed>\n")
		assert.Contains(t, diff["after"], "  clientId: <redacted>\n", "an unchanged key is not marked")
		assert.NotEqual(t, diff["before"], diff["after"])
		sec, _ := kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		assert.Equal(t, clientSecret, string(sec.Data["clientSecret"]), "check mode persisted nothing")

		delete(args, "_ansible_check_mode")
		res, code = runSeed(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		sec, _ = kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		assert.Equal(t, "rotated-secret-2b8e", string(sec.Data["clientSecret"]))
	})

	t.Run("bad keys fail before anything is written", func(t *testing.T) {
		for name, secret := range map[string]map[string]any{
			"malformed ssh key": {"name": "bad", "namespace": "flux-system", "git_deploy_key": map[string]any{"private_key": "not a key"}},
			"wrong age key":     {"name": "bad", "namespace": "flux-system", "age_key": map[string]any{"key": "AGE-SECRET-KEY-1WRONG"}},
			"bad known_hosts":   {"name": "bad", "namespace": "flux-system", "git_deploy_key": map[string]any{"private_key": deployKey, "known_hosts": "nonsense"}},
		} {
			res, code := runSeed(map[string]any{"namespaces": []any{"never-created"}, "secrets": []any{secret}})
			assert.Equal(t, 1, code, name)
			assert.Contains(t, res["msg"], "secrets[0] (flux-system/bad)", name)
		}
		_, err := kc.CoreV1().Namespaces().Get(ctx, "never-created", metav1.GetOptions{})
		assert.Error(t, err)
	})

	t.Run("a secret Flux adopted is left alone unless forced", func(t *testing.T) {
		_, err := kc.CoreV1().Secrets("platform").Patch(ctx, "infisical-universal-auth", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/name":"platform"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		res, code := runSeed(seed(clientSecret))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		adopted := res["secrets"].([]any)[2].(map[string]any)
		assert.Equal(t, true, adopted["adopted"])
		assert.Contains(t, res["warnings"], "Secret platform/infisical-universal-auth is adopted by Flux (kustomize.toolkit.fluxcd.io/name=platform): left alone; set force=true to change it anyway")

		args := seed(clientSecret)
		args["force"] = true
		res, code = runSeed(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
	})

	t.Run("a changed type needs force, and check mode reports the replacement", func(t *testing.T) {
		typed := func(extra map[string]any) map[string]any {
			args := map[string]any{"secrets": []any{map[string]any{"name": "infisical-universal-auth", "namespace": "platform",
				"type": "kubernetes.io/basic-auth", "string_data": map[string]any{"username": "infisical-user", "password": clientSecret}}}}
			for k, v := range extra {
				args[k] = v
			}
			return args
		}
		_, err := kc.CoreV1().Secrets("platform").Patch(ctx, "infisical-universal-auth", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/name":null}}}`), metav1.PatchOptions{})
		require.NoError(t, err, "no longer adopted")
		res, code := runSeed(typed(nil))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "a Secret's type cannot change; delete it or set force=true to replace it")
		res, code = runSeed(typed(map[string]any{"force": true, "_ansible_check_mode": true}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		sec, err := kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "Opaque", string(sec.Type), "check mode replaced nothing")
		res, code = runSeed(typed(map[string]any{"force": true}))
		require.Equal(t, 0, code, res["msg"])
		sec, err = kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "kubernetes.io/basic-auth", string(sec.Type))
	})

	t.Run("a type change the API server refuses leaves the old Secret as it was", func(t *testing.T) {
		before, err := kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		for _, check := range []bool{true, false} {
			res, code := runSeed(map[string]any{"force": true, "_ansible_check_mode": check, "secrets": []any{map[string]any{"name": "infisical-universal-auth", "namespace": "platform",
				"type": "kubernetes.io/tls", "string_data": map[string]any{"not-a-cert": clientSecret}}}})
			assert.Equal(t, 1, code, "check mode %v", check)
			assert.Contains(t, res["msg"], "the API server refuses the new one, so the old one was left as it is")
			assert.Contains(t, res["msg"], "tls.crt")
		}
		after, err := kc.CoreV1().Secrets("platform").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.UID, after.UID, "never deleted")
		assert.Equal(t, before.Type, after.Type)
		assert.Equal(t, before.Data, after.Data)
	})

	t.Run("state absent deletes the secrets", func(t *testing.T) {
		args := seed(clientSecret)
		args["state"], args["force"] = "absent", true
		res, code := runSeed(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		_, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "git-deploy-key", metav1.GetOptions{})
		assert.Error(t, err)
	})

	t.Run("no secret value in any output", func(t *testing.T) {
		all := strings.Join(outputs, "\n")
		for _, s := range secrets {
			for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
				if len(line) > 20 {
					assert.NotContains(t, all, line)
				}
			}
		}
	})
}
