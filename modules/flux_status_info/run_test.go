package fluxstatus

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func TestRevisionMatches(t *testing.T) {
	const served = "main@sha1:4f1c9a0d2b8e6a7d5c3b1a0f9e8d7c6b5a4f3e2d"
	for _, tc := range []struct {
		wanted string
		want   bool
	}{
		{served, true}, {"4f1c9a0", true}, {"4f1c9a0d2b8e6a7d5c3b1a0f9e8d7c6b5a4f3e2d", true},
		{"4f1c9a", false}, {"deadbee", false}, {"main@sha1:0000000", false},
	} {
		assert.Equal(t, tc.want, revisionMatches(served, tc.wanted), tc.wanted)
	}
	assert.False(t, revisionMatches("", "4f1c9a0"))
}

func obj(t *testing.T, s string) *unstructured.Unstructured {
	// As the API returns it: numbers as int64.
	raw, err := yaml.YAMLToJSON([]byte(s))
	assert.NoError(t, err)
	u := &unstructured.Unstructured{}
	assert.NoError(t, u.UnmarshalJSON(append([]byte(`{"apiVersion":"v1","kind":"X",`), raw[1:]...)))
	return u
}

func TestToItem(t *testing.T) {
	ks := toItem("Kustomization", obj(t, `
metadata: {name: apps, namespace: flux-system, generation: 2}
spec:
  dependsOn: [{name: infra-configs}, {name: crds, namespace: other}]
status:
  observedGeneration: 2
  lastAppliedRevision: main@sha1:abc
  conditions: [{type: Ready, status: "False", reason: DependencyNotReady, message: "dependency not ready"}]
`))
	assert.Contains(t, ks.state, "DependencyNotReady", "its status, to see progress")
	ks.state = ""
	assert.Equal(t, item{Kind: "Kustomization", Namespace: "flux-system", Name: "apps", Status: "False", Reason: "DependencyNotReady",
		Message: "dependency not ready", Revision: "main@sha1:abc", DependsOn: []string{"flux-system/infra-configs", "other/crds"}}, ks)
	assert.True(t, ks.failing())

	stale := toItem("GitRepository", obj(t, `
metadata: {name: flux-system, namespace: flux-system, generation: 3}
status:
  observedGeneration: 2
  artifact: {revision: main@sha1:old}
  conditions: [{type: Ready, status: "True", reason: Succeeded}]
`))
	assert.False(t, stale.Ready, "a Ready condition for an older generation does not count")
	assert.Equal(t, "main@sha1:old", stale.Revision)

	suspended := toItem("Kustomization", obj(t, "metadata: {name: x, namespace: y}\nspec: {suspend: true}\n"))
	assert.False(t, suspended.failing(), "suspended is reported, not failing")
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestConditionGeneration(t *testing.T) {
	it := toItem("FluxInstance", obj(t, `
metadata: {name: flux, namespace: flux-system, generation: 2}
status:
  conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded, observedGeneration: 1}]
`))
	assert.False(t, it.Ready, "a Ready condition set for generation 1 says nothing of generation 2")
}

func TestNothingToCheckIsNotReady(t *testing.T) {
	assert.False(t, report{}.ready(), "no source at all")
	assert.True(t, report{SourceFound: true}.ready())
	assert.False(t, report{SourceFound: true, RevisionWanted: "4f1c9a0"}.ready())
}

func TestStalledIsTerminalForItsGeneration(t *testing.T) {
	stalled := toItem("Kustomization", obj(t, `
metadata: {name: apps, namespace: flux-system, generation: 2}
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: "False", reason: BuildFailed, message: "kustomize build failed"}
  - {type: Stalled, status: "True", reason: BuildFailed, message: "kustomize build failed"}
`))
	rep := report{SourceFound: true, Failing: []item{stalled}}
	assert.Equal(t, "Kustomization/flux-system/apps is stalled: BuildFailed: kustomize build failed (Flux will not retry until its spec changes)", rep.terminal())

	older := toItem("Kustomization", obj(t, `
metadata: {name: apps, namespace: flux-system, generation: 3}
status:
  observedGeneration: 2
  conditions: [{type: Stalled, status: "True", reason: BuildFailed, message: "old"}]
`))
	assert.Empty(t, report{Failing: []item{older}}.terminal(), "stalled for an older generation: the new one may succeed")
}

func TestSyncMismatch(t *testing.T) {
	instance := func(sync string) *unstructured.Unstructured {
		return obj(t, "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {name: flux, namespace: flux-system}\nspec:\n  distribution: {version: 2.9.x}\n"+sync)
	}
	clients := func(objs ...runtime.Object) *kube.Clients {
		scheme := runtime.NewScheme()
		return &kube.Clients{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
			map[schema.GroupVersionResource]string{kube.FluxInstanceGVR: "FluxInstanceList"}, objs...)}
	}
	ctx := context.Background()
	assert.NoError(t, syncMismatch(ctx, clients(), "flux-system", "flux-system"), "no instance: the source may still come")
	assert.NoError(t, syncMismatch(ctx, clients(instance("  sync: {kind: GitRepository, url: x, ref: main, path: p}\n")), "flux-system", "flux-system"))

	err := syncMismatch(ctx, clients(instance("")), "flux-system", "flux-system")
	assert.EqualError(t, err, "FluxInstance flux-system/flux has no spec.sync, so it makes no source flux-system/flux-system to wait for: add spec.sync, or name your own source in the source option")

	err = syncMismatch(ctx, clients(instance("  sync: {kind: GitRepository, name: cluster, url: x, ref: main, path: p}\n")), "flux-system", "flux-system")
	assert.EqualError(t, err, "FluxInstance flux-system/flux syncs through GitRepository flux-system/cluster, not flux-system/flux-system: set source to flux-system/cluster")
}
