package repocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/hostnetwork"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// A FluxInstance inside its own sync path (seed 000: flux/cluster.yaml in
// sync.path flux, no kustomization.yaml there, so kustomize-controller's
// generated kustomization takes it) is reconciled by Flux too: Flux
// managing itself, as flux-operator documents upgrades through git, and
// legitimate. It is a warning, for its consequence under prune; it fails
// only when the FluxInstance in git is not the one the play applies, since
// the play and Flux would then each apply their own.

// pruneAnnotation, set to disabled, keeps an object kustomize-controller
// applies from being deleted when it leaves the source.
const pruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"

// appliedInstance is the FluxInstance the play applies, as flux_instance
// loads it: the namespace defaulted, the host-network patches added.
func appliedInstance(o Options) (*unstructured.Unstructured, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(o.Instance, &obj); err != nil {
		return nil, fmt.Errorf("%s: not YAML: %w", o.InstanceFile, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if u.GetNamespace() == "" {
		u.SetNamespace("flux-system")
	}
	if o.HostNetwork {
		if err := hostnetwork.Add(u); err != nil {
			return nil, fmt.Errorf("%s: %w", o.InstanceFile, err)
		}
	}
	return u, nil
}

// instanceFromGit judges a FluxInstance that Kustomization id's build
// applies: a problem when it is not the play's, else a warning unless a
// removal of its file cannot delete it (annotated, or no prune).
func (b *builder) instanceFromGit(id, rel string, ks, git unstructured.Unstructured) {
	if git.GetNamespace() == "" {
		git.SetNamespace(b.sync.namespace)
	}
	name := git.GetNamespace() + "/" + git.GetName()
	if differ := instanceDifference(b.applied, &git); differ != "" {
		fix := "make the two the same: have the play apply the file Flux reads (flux_bootstrap_instance_src), or leave the FluxInstance out of " + rel + "/ (an explicit kustomization.yaml there that does not list it)"
		if b.hostNetwork {
			fix = "make the two the same, which the file cannot be with host_network (flux_bootstrap_cni_from_flux: the play adds its host-network patches to spec.kustomize.patches, and Flux would apply the file without them): leave the FluxInstance out of " + rel + "/ (an explicit kustomization.yaml there that does not list it)"
		}
		b.report.Problems = append(b.report.Problems, Problem{Kind: "instance", Kustomization: id, Path: b.instanceFile, Fix: fix,
			Message: fmt.Sprintf("the FluxInstance %s that Kustomization %s (path %s) applies from git differs from the one the play applies (%s) in %s: the play and Flux would each apply their own", name, id, rel, b.instanceFile, differ)})
		return
	}
	if prune, _, _ := unstructured.NestedBool(ks.Object, "spec", "prune"); !prune || git.GetAnnotations()[pruneAnnotation] == "disabled" {
		return
	}
	b.report.Warnings = append(b.report.Warnings, b.instanceInPath(id, rel, name, b.gitFileOf(git.GetName())))
}

// gitFileOf names the repository's file that holds the FluxInstance: the
// play's when it is inside the repository, else the first the artifact
// keeps ("" when none is found).
func (b *builder) gitFileOf(name string) string {
	if b.instanceInRepo {
		return b.instanceFile
	}
	for _, f := range b.report.files {
		ext := path.Ext(f.Path)
		if f.Excluded || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		content, err := os.ReadFile(filepath.Join(b.work, filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Contains(content, []byte(kube.FluxInstanceKind)) {
			continue
		}
		for _, doc := range yamlDocuments(content) {
			if root := doc.Content[0]; scalar(root, "kind") == kube.FluxInstanceKind && scalar(field(root, "metadata"), "name") == name {
				return f.Path
			}
		}
	}
	return ""
}

// instanceDifference names what differs between the play's FluxInstance
// and git's, compared as data (not as text): its identity, or the top-level
// fields of spec ("" when they are the same).
func instanceDifference(applied, git *unstructured.Unstructured) string {
	if applied.GetNamespace() != git.GetNamespace() || applied.GetName() != git.GetName() {
		return fmt.Sprintf("its namespace/name (the play's is %s/%s)", applied.GetNamespace(), applied.GetName())
	}
	a, _ := asJSON(applied.Object["spec"]).(map[string]any)
	g, _ := asJSON(git.Object["spec"]).(map[string]any)
	var differ []string
	for k := range a {
		if !reflect.DeepEqual(a[k], g[k]) {
			differ = append(differ, "spec."+k)
		}
	}
	for k := range g {
		if _, ok := a[k]; !ok {
			differ = append(differ, "spec."+k)
		}
	}
	slices.Sort(differ)
	return strings.Join(differ, ", ")
}

// asJSON is v as encoding/json reads it back: one type per number, so that
// YAML decoders' int and float64 compare equal.
func asJSON(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return v
	}
	return out
}

// instanceInPath is the warning for a FluxInstance Flux reconciles from
// its own sync path: the consequence, and the two fixes.
func (b *builder) instanceInPath(id, rel, instance, file string) Problem {
	where := file
	if file == "" {
		where = "the FluxInstance's file"
	}
	fix := "annotate it `" + pruneAnnotation + ": disabled` (metadata.annotations in " + where + "), or "
	if strings.HasPrefix(file, rel+"/") && !hasKustomization(filepath.Join(b.work, filepath.FromSlash(rel))) {
		fix += "list " + rel + "/'s resources in an explicit " + path.Join(rel, "kustomization.yaml") + " that leaves " + path.Base(file) + " out"
	} else {
		fix += "leave it out of the resources of " + rel + "/'s kustomization.yaml"
	}
	return Problem{Kind: "instance", Kustomization: id, Path: file, Fix: fix,
		Message: fmt.Sprintf("Kustomization %s (path %s) applies the FluxInstance %s (%s): Flux reconciles its own FluxInstance, so a change to the file reaches the cluster through git (as flux-operator documents upgrades), and with prune, removing or renaming the file deletes the FluxInstance, and Flux with it", id, rel, instance, where)}
}

// hasKustomization: dir has a kustomization file of its own (kustomize's names).
func hasKustomization(dir string) bool {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
