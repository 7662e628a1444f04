package seedsecret

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// A seed ConfigMap (cluster variables for Flux's postBuild.substituteFrom)
// is written once: created when missing, then left to Flux and to whoever
// edits it, never updated. Its values are no secret: the diff shows them.

type configMapSpec struct {
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Data      map[string]any `json:"data"`
}

type configMapResult struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Keys      []string `json:"keys"`
	Created   bool     `json:"created"`
	Deleted   bool     `json:"deleted,omitempty"`
	// Differs lists the keys whose value in the cluster is not the one
	// given (or missing): the ConfigMap is left as it is.
	Differs   []string `json:"differs"`
	Adopted   bool     `json:"adopted"`
	AdoptedBy string   `json:"adopted_by,omitempty"`
}

type configMapPlan struct {
	result configMapResult
	diff   *ansible.Diff
	create *unstructured.Unstructured
	delete bool
}

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// configMapData turns the given values into a ConfigMap's strings the way
// they read in YAML (true, 3, 0.5), so that a substituted ${var} reads as
// the user wrote it; a list or a dict is refused.
func configMapData(i int, s configMapSpec) (map[string]string, error) {
	data := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		switch v := v.(type) {
		case string:
			data[k] = v
		case bool:
			data[k] = fmt.Sprint(v)
		case json.Number:
			data[k] = v.String()
		case nil:
			data[k] = ""
		default:
			return nil, fmt.Errorf("config_maps[%d] (%s/%s): data.%s is a %T; expected a string, a number or a boolean", i, s.Namespace, s.Name, k, v)
		}
	}
	return data, nil
}

// planConfigMap: a missing ConfigMap is created (the API server is asked,
// by a dry run, whether it would, when its namespace exists); an existing
// one is never changed.
func planConfigMap(ctx context.Context, c *kube.Clients, s configMapSpec, data map[string]string) (configMapPlan, error) {
	p := configMapPlan{result: configMapResult{Name: s.Name, Namespace: s.Namespace, Keys: sortedKeys(data), Differs: []string{}}}
	current, err := c.Get(ctx, configMapGVR, s.Namespace, s.Name)
	if err != nil {
		return p, err
	}
	if current != nil {
		p.result.AdoptedBy, p.result.Adopted = kube.FluxOwned(current)
		have, _, _ := unstructured.NestedStringMap(current.Object, "data")
		for _, k := range p.result.Keys {
			if v, ok := have[k]; !ok || v != data[k] {
				p.result.Differs = append(p.result.Differs, k)
			}
		}
		return p, nil
	}
	p.create = configMapObject(s, data)
	if _, err := c.Typed.CoreV1().Namespaces().Get(ctx, s.Namespace, metav1.GetOptions{}); err == nil {
		if err := createConfigMap(ctx, c, p.create, true); err != nil {
			return p, err
		}
	} else if !apierrors.IsNotFound(err) {
		return p, fmt.Errorf("get namespace %s: %w", s.Namespace, err)
	}
	p.result.Created = true
	p.diff = configMapDiff(s, "", p.create)
	return p, nil
}

// planConfigMapDelete: state=absent deletes an existing ConfigMap that Flux
// has not adopted (unless force).
func planConfigMapDelete(ctx context.Context, c *kube.Clients, s configMapSpec, force bool) (configMapPlan, error) {
	p := configMapPlan{result: configMapResult{Name: s.Name, Namespace: s.Namespace, Keys: []string{}, Differs: []string{}}}
	current, err := c.Get(ctx, configMapGVR, s.Namespace, s.Name)
	if err != nil || current == nil {
		return p, err
	}
	if by, adopted := kube.FluxOwned(current); adopted && !force {
		p.result.Adopted, p.result.AdoptedBy = true, by
		return p, nil
	}
	if err := c.Dynamic.Resource(configMapGVR).Namespace(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsNotFound(err) {
		return p, fmt.Errorf("delete ConfigMap %s/%s: %w", s.Namespace, s.Name, err)
	}
	p.delete, p.result.Deleted = true, true
	p.diff = configMapDiff(s, renderConfigMap(current), nil)
	return p, nil
}

func (p configMapPlan) changed() bool { return p.create != nil || p.delete }

func (p configMapPlan) carryOut(ctx context.Context, c *kube.Clients) error {
	switch {
	case p.create != nil:
		return createConfigMap(ctx, c, p.create, false)
	case p.delete:
		err := c.Dynamic.Resource(configMapGVR).Namespace(p.result.Namespace).Delete(ctx, p.result.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ConfigMap %s/%s: %w", p.result.Namespace, p.result.Name, err)
		}
	}
	return nil
}

// createConfigMap creates, never updates: one that appeared since the plan
// is left as it is.
func createConfigMap(ctx context.Context, c *kube.Clients, obj *unstructured.Unstructured, dryRun bool) error {
	opts := metav1.CreateOptions{FieldManager: kube.FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := c.Dynamic.Resource(configMapGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, opts); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s: %w", kube.ObjectName(obj), err)
	}
	return nil
}

func configMapObject(s configMapSpec, data map[string]string) *unstructured.Unstructured {
	d := make(map[string]any, len(data))
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace},
		"data":     d,
	}}
}

// renderConfigMap is the diff's text of a ConfigMap: its name and data.
func renderConfigMap(obj *unstructured.Unstructured) string {
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	out, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}, "data": data})
	return string(out)
}

func configMapDiff(s configMapSpec, before string, after *unstructured.Unstructured) *ansible.Diff {
	header := "configmap/" + s.Namespace + "/" + s.Name
	d := &ansible.Diff{Before: before, BeforeHeader: header, AfterHeader: header}
	if after != nil {
		d.After = renderConfigMap(after)
	}
	return d
}

// differsWarning says, once per run, which seed ConfigMaps hold other
// values than the play's: they were written once and are not updated.
func differsWarning(plans []configMapPlan) string {
	var names []string
	for _, p := range plans {
		if len(p.result.Differs) > 0 && !p.result.Adopted {
			names = append(names, fmt.Sprintf("%s/%s (%s)", p.result.Namespace, p.result.Name, strings.Join(p.result.Differs, ", ")))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "ConfigMap " + strings.Join(names, "; ") + " holds other values than given: a seed ConfigMap is written once and then left to Flux, so it was not changed; edit it in the cluster or in your repository"
}
