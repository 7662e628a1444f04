//go:build integration

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// The API server going away for 10 s in the middle of a wait (an upgrade,
// a crash) does not fail flux_instance, cluster_nodes_info or flux_status_info: each
// retries until its wait_timeout and succeeds once what it waits for is
// there. Each wait is made to need something that only happens after the
// restart, so the blip always lands inside it.
func TestWaitsSurviveAnAPIServerRestart(t *testing.T) {
	// Mostly waiting (an API server down 10 s, Flux's controllers coming back): beside TestHandOff.
	t.Parallel()
	// Built first: make build can take minutes on a cold cache, and no wait below may count them.
	m := modules(t)
	b := bed.Start(t, bed.Options{Name: "k3sfr", Subnet: "10.213.9", Flux: true, AuditReads: true})
	ctx := t.Context()
	require.NoError(t, b.AddNode(ctx, "worker"))
	call := func(module string, args map[string]any) (map[string]any, int) {
		t.Helper()
		args["kubeconfig"] = b.Kubeconfig
		res, code, _ := m.run(module, args)
		return res, code
	}
	type result struct {
		res     map[string]any
		code    int
		elapsed time.Duration
	}
	// during runs the module in the background, restarts the API server
	// once the wait is under way, then does what the wait needs. Under way:
	// the API server answered one of the module's reads twice (each of these
	// modules' reads before its wait are each made once), so the module's
	// wait has begun, however long the machine took to get there.
	during := func(t *testing.T, module string, args map[string]any, after func()) result {
		t.Helper()
		args["_ansible_verbosity"] = 1
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			res, code := call(module, args)
			done <- result{res, code, time.Since(start)}
		}()
		for polling := false; !polling; {
			select {
			case r := <-done:
				require.FailNow(t, module+" ended before its wait was under way", "exit %d: %v", r.code, r.res["msg"])
			case <-time.After(200 * time.Millisecond):
			}
			reads, err := b.APIReads(moduleUserAgent, start)
			require.NoError(t, err)
			seen := map[string]bool{}
			for _, r := range reads {
				polling = polling || seen[r.URI]
				seen[r.URI] = true
			}
		}
		restart := time.Now()
		require.NoError(t, b.RestartAPIServer(ctx, 10*time.Second))
		back := time.Now()
		t.Logf("%s: kube-apiserver stopped, down 10 s and ready again in %s", module, back.Sub(restart).Round(100*time.Millisecond))
		after()
		r := <-done
		t.Logf("%s: ended (exit %d) %s after it started, %s after the API server was back; reconciles requested: %v", module, r.code,
			r.elapsed.Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond), r.res["reconciles_requested"])
		// Only a wait's own reporter (kube.Poll through kube.Reporter) says
		// "retrying": the outage landed inside the wait, at its first check
		// (flux_status_info reads several lists in one check, so a URI read
		// twice does not mean the first check is over) or a later one.
		assert.GreaterOrEqual(t, progressIndex(r.res, "] the API server did not answer, retrying"), 0,
			"the module was waiting when the API server went away: %v", r.res["progress"])
		return r
	}
	deployKey, err := os.ReadFile(b.Flux.Git.DeployKey)
	require.NoError(t, err)
	res, code := call("seed_secret", map[string]any{"namespaces": []any{"flux-system"}, "secrets": []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system",
		"git_deploy_key": map[string]any{"private_key": string(deployKey), "known_hosts": b.Flux.Git.KnownHosts}}}, "config_maps": []any{bed.ClusterVars()}})
	require.Equal(t, 0, code, res["msg"])

	t.Run("flux_instance waiting for the operator", func(t *testing.T) {
		definition := map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance", "metadata": map[string]any{"name": "flux"},
			"spec": map[string]any{
				"distribution": map[string]any{"version": "2.9.x", "registry": "ghcr.io/fluxcd"},
				"components":   []any{"source-controller", "kustomize-controller"},
				"cluster":      map[string]any{"networkPolicy": false},
				"sync": map[string]any{"kind": "GitRepository", "url": b.Flux.Git.SSHURL, "ref": "refs/heads/main",
					"path": "clusters/test", "pullSecret": "git-deploy-key", "interval": "10m"}, // no reconcile but the one asked for
			}}
		r := during(t, "flux_instance", map[string]any{"definition": definition, "require_secrets": []any{"flux-system/git-deploy-key"}}, func() {
			res, code := call("flux_operator", map[string]any{"chart_ref": b.Registry.ChartRef(), "chart_version": "0.59.0", "plain_http": true})
			require.Equal(t, 0, code, res["msg"])
		})
		require.Equal(t, 0, r.code, r.res["msg"])
		assert.Equal(t, true, r.res["ready"])
		assert.Contains(t, fmt.Sprint(r.res["progress"]), "the API server did not answer, retrying")
	})

	t.Run("cluster_nodes_info waiting for a node", func(t *testing.T) {
		r := during(t, "cluster_nodes_info", map[string]any{"names": []any{"worker", "late"}}, func() {
			require.NoError(t, b.AddNode(ctx, "late"))
		})
		require.Equal(t, 0, r.code, r.res["msg"])
		assert.Empty(t, r.res["not_ready"])
		assert.Contains(t, fmt.Sprint(r.res["progress"]), "the API server did not answer, retrying")
	})

	// Flux's own controllers take a while to come back from the blip (their
	// watches re-list with backoff): measured 1m54s, within the module's
	// default wait (300 s), which every wait here keeps. Nobody asks
	// Flux for the new commit (the source's interval is 10m): flux_status_info
	// asks, as `flux reconcile source git` does, once the source has shown no
	// progress for reconcile_stalled_after. The same request moves on a
	// Kustomization that the blip left "Reconciliation in progress":
	// kustomize-controller v1.9.5 (internal/controller/kustomization_controller.go,
	// Reconcile and reconcile) persists that status when its first status patch
	// fails in an API server outage, then waits retryInterval (its interval,
	// 10m here) before it tries again.
	t.Run("flux_status_info waiting for a revision, asking Flux for it", func(t *testing.T) {
		sha, err := b.Flux.Git.Commit("after the blip", map[string]string{"infra/configs/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: infra\ndata:\n  greeting: blip\n"})
		require.NoError(t, err)
		r := during(t, "flux_status_info", map[string]any{"wait": true, "wait_for_revision": sha[:12], "reconcile_stalled_after": 20}, func() {})
		if r.code != 0 {
			t.Log(b.Flux.LogTails(60)) // what the controllers were doing
		}
		require.Equal(t, 0, r.code, r.res["msg"])
		assert.Equal(t, true, r.res["ready"])
		assert.Contains(t, fmt.Sprint(r.res["progress"]), "the API server did not answer, retrying")
		assert.Contains(t, r.res["reconciles_requested"], "GitRepository/flux-system/flux-system")
		assert.Contains(t, fmt.Sprint(r.res["progress"]), "requested a reconcile of GitRepository/flux-system/flux-system: its status has not changed for 20s")
	})
}

// moduleUserAgent is the User-Agent of the modules' requests
// (internal/kube, RESTConfig).
const moduleUserAgent = "gitops.k3s_flux"

// progressIndex is the index of the first of res's progress lines that
// contains s, or -1.
func progressIndex(res map[string]any, s string) int {
	lines, _ := res["progress"].([]any)
	for i, line := range lines {
		if strings.Contains(fmt.Sprint(line), s) {
			return i
		}
	}
	return -1
}
