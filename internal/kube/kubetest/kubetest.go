// Package kubetest is an in-memory cluster for the controller modules' unit
// tests: one store behind both the typed and the dynamic client, as one API
// server is, with what the modules rely on: NotFound and AlreadyExists,
// server-side apply with managedFields per field manager, dry runs that
// persist nothing, generation bumped on a spec change, label and field
// selectors, and a count of real writes. It is a fake: the integration
// tests hold the modules to a real API server.
package kubetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// ServerVersion is what the fake's discovery reports.
const ServerVersion = "v1.37.2"

// Cluster is the in-memory cluster.
type Cluster struct {
	// Fail, when set, is asked before every request (verb: get, list,
	// create, update, delete, patch, apply, evict); an error it returns is
	// the request's, as from a failing API server.
	Fail func(verb string, gvr schema.GroupVersionResource, name string) error

	mu      sync.Mutex
	objects map[schema.GroupVersionResource]map[types.NamespacedName]*unstructured.Unstructured
	rv      int
	writes  int
}

// New returns a cluster holding objs (typed objects of client-go's scheme,
// or unstructured ones).
func New(objs ...runtime.Object) *Cluster {
	c := &Cluster{objects: map[schema.GroupVersionResource]map[types.NamespacedName]*unstructured.Unstructured{}}
	for _, o := range objs {
		u := toUnstructured(o)
		c.store(resourceFor(u.GroupVersionKind()), c.stamp(u))
	}
	return c
}

// Connector hands the modules this cluster whatever the connection options say.
func (c *Cluster) Connector() kube.Connector {
	return func(kube.Connection) (*kube.Clients, error) { return c.Clients(), nil }
}

// Clients are a typed and a dynamic client over this cluster.
func (c *Cluster) Clients() *kube.Clients {
	typed := kubefake.NewClientset()
	typed.PrependReactor("*", "*", c.typedReaction)
	typed.Discovery().(*fake.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: ServerVersion, Major: "1", Minor: "37"}
	return &kube.Clients{Typed: typed, Dynamic: dynamicClient{c}}
}

// Writes counts the requests that changed something (dry runs do not).
func (c *Cluster) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// Object returns a copy of the stored object, or nil.
func (c *Cluster) Object(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[gvr][types.NamespacedName{Namespace: namespace, Name: name}]; o != nil {
		return o.DeepCopy()
	}
	return nil
}

// Put stores obj as it is given (its status too), as a controller would
// write it; it does not count as a write.
func (c *Cluster) Put(obj runtime.Object) {
	u := toUnstructured(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	gvr := resourceFor(u.GroupVersionKind())
	if old := c.objects[gvr][key(u)]; old != nil {
		u.SetUID(old.GetUID())
		u.SetCreationTimestamp(old.GetCreationTimestamp())
	}
	c.store(gvr, c.stamp(u))
}

func key(u *unstructured.Unstructured) types.NamespacedName {
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
}

func (c *Cluster) store(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	if c.objects[gvr] == nil {
		c.objects[gvr] = map[types.NamespacedName]*unstructured.Unstructured{}
	}
	c.objects[gvr][key(u)] = u
}

// stamp gives an object what the API server would: uid, creation time,
// generation and a new resourceVersion.
func (c *Cluster) stamp(u *unstructured.Unstructured) *unstructured.Unstructured {
	c.rv++
	u.SetResourceVersion(fmt.Sprint(c.rv))
	if u.GetUID() == "" {
		u.SetUID(types.UID(fmt.Sprintf("uid-%d", c.rv)))
	}
	if ts := u.GetCreationTimestamp(); ts.IsZero() {
		u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	}
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	return u
}

// CRDGVR is where custom resource definitions are stored: a resource of a
// group client-go does not know is served only once its CRD is there, as
// on a real API server.
var CRDGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD is a custom resource definition for gvr (kind as given), Established.
func CRD(gvr schema.GroupVersionResource, kind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]any{"group": gvr.Group, "names": map[string]any{"kind": kind, "plural": gvr.Resource}, "scope": "Namespaced",
			"versions": []any{map[string]any{"name": gvr.Version, "served": true, "storage": true}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}},
	}}
}

// fail is the injected failure, or NotFound for a resource nothing serves.
func (c *Cluster) fail(verb string, gvr schema.GroupVersionResource, name string) error {
	if c.Fail != nil {
		if err := c.Fail(verb, gvr, name); err != nil {
			return err
		}
	}
	if gvr.Group == "" || gvr == CRDGVR || scheme.Scheme.IsGroupRegistered(gvr.Group) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objects[CRDGVR][types.NamespacedName{Name: gvr.Resource + "." + gvr.Group}] == nil {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return nil
}

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

func (c *Cluster) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	if err := c.fail("get", gvr, name); err != nil {
		return nil, err
	}
	if o := c.Object(gvr, ns, name); o != nil {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (c *Cluster) list(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
	if err := c.fail("list", gvr, ""); err != nil {
		return nil, err
	}
	labelSel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	fieldSel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []unstructured.Unstructured
	for k, o := range c.objects[gvr] {
		if (ns == "" || k.Namespace == ns) && labelSel.Matches(labels.Set(o.GetLabels())) && fieldSel.Matches(fieldSet(o)) {
			out = append(out, *o.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out, nil
}

// fieldSet holds the fields the modules select on.
func fieldSet(o *unstructured.Unstructured) fields.Set {
	set := fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}
	if node, ok, _ := unstructured.NestedString(o.Object, "spec", "nodeName"); ok {
		set["spec.nodeName"] = node
	}
	for _, f := range []string{"kind", "name", "namespace"} {
		if v, ok, _ := unstructured.NestedString(o.Object, "involvedObject", f); ok {
			set["involvedObject."+f] = v
		}
	}
	return set
}

func (c *Cluster) create(gvr schema.GroupVersionResource, ns string, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	if err := c.fail("create", gvr, u.GetName()); err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	if ns != "" {
		u.SetNamespace(ns)
	}
	if u.GetName() == "" && u.GetGenerateName() != "" {
		c.mu.Lock()
		u.SetName(fmt.Sprintf("%s%05d", u.GetGenerateName(), c.rv+1))
		c.mu.Unlock()
	}
	if u.GetName() == "" {
		return nil, apierrors.NewBadRequest("name or generateName is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objects[gvr][key(u)] != nil {
		return nil, apierrors.NewAlreadyExists(gvr.GroupResource(), u.GetName())
	}
	u.SetResourceVersion("")
	u.SetUID("")
	u.SetGeneration(0)
	return c.commit(gvr, u, dryRun), nil
}

// commit stamps u and, unless it is a dry run, stores it as a write; it
// returns what the API server would.
func (c *Cluster) commit(gvr schema.GroupVersionResource, u *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	u = c.stamp(u)
	if !dryRun {
		c.store(gvr, u)
		c.writes++
	}
	return u.DeepCopy()
}

func (c *Cluster) update(gvr schema.GroupVersionResource, ns string, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	if err := c.fail("update", gvr, u.GetName()); err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	if ns != "" {
		u.SetNamespace(ns)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.objects[gvr][key(u)]
	if old == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), u.GetName())
	}
	return c.replace(gvr, old, u, dryRun), nil
}

// replace stores u in old's place as the API server would: identity kept,
// generation bumped when the spec changed.
func (c *Cluster) replace(gvr schema.GroupVersionResource, old, u *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	u.SetUID(old.GetUID())
	u.SetCreationTimestamp(old.GetCreationTimestamp())
	u.SetGeneration(old.GetGeneration())
	if !reflect.DeepEqual(old.Object["spec"], u.Object["spec"]) {
		u.SetGeneration(old.GetGeneration() + 1)
	}
	if u.Object["status"] == nil && old.Object["status"] != nil {
		u.Object["status"] = old.Object["status"]
	}
	return c.commit(gvr, u, dryRun)
}

func (c *Cluster) delete(gvr schema.GroupVersionResource, ns, name string, dryRun bool) error {
	if err := c.fail("delete", gvr, name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := types.NamespacedName{Namespace: ns, Name: name}
	if c.objects[gvr][k] == nil {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if !dryRun {
		delete(c.objects[gvr], k)
		c.writes++
	}
	return nil
}

func (c *Cluster) mergePatch(gvr schema.GroupVersionResource, ns, name string, patch []byte, dryRun bool) (*unstructured.Unstructured, error) {
	if err := c.fail("patch", gvr, name); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.objects[gvr][types.NamespacedName{Namespace: ns, Name: name}]
	if old == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	raw, err := old.MarshalJSON()
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(raw, patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(merged); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return c.replace(gvr, old, u, dryRun), nil
}

// apply is server-side apply for one field manager: the fields it applies
// are set, the data keys and labels it applied before but no longer does
// are removed, other managers' keys stay.
func (c *Cluster) apply(gvr schema.GroupVersionResource, ns, name string, patch []byte, opts metav1.PatchOptions) (*unstructured.Unstructured, error) {
	if err := c.fail("apply", gvr, name); err != nil {
		return nil, err
	}
	if opts.FieldManager == "" {
		return nil, apierrors.NewBadRequest("PATCH with apply requires a field manager")
	}
	applied := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(patch, &applied.Object); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	applied.SetName(name)
	if ns != "" {
		applied.SetNamespace(ns)
	}
	dryRun := isDryRun(opts.DryRun)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.objects[gvr][key(applied)]
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if old != nil {
		u = old.DeepCopy()
	}
	owned := ownedFields(u, opts.FieldManager)
	for field, value := range applied.Object {
		switch field {
		case "metadata":
			continue
		case "data", "stringData":
			current, _, _ := unstructured.NestedMap(u.Object, field)
			if current == nil {
				current = map[string]any{}
			}
			for k := range owned[field] {
				delete(current, k)
			}
			for k, v := range value.(map[string]any) {
				current[k] = v
			}
			u.Object[field] = current
		default:
			u.Object[field] = value
		}
	}
	u.SetAPIVersion(applied.GetAPIVersion())
	u.SetKind(applied.GetKind())
	u.SetName(applied.GetName())
	u.SetNamespace(applied.GetNamespace())
	mergeMap := func(current map[string]string, prevOwned map[string]bool, given map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range current {
			if !prevOwned[k] {
				out[k] = v
			}
		}
		for k, v := range given {
			out[k] = v
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	u.SetLabels(mergeMap(u.GetLabels(), owned["labels"], applied.GetLabels()))
	u.SetAnnotations(mergeMap(u.GetAnnotations(), owned["annotations"], applied.GetAnnotations()))
	setManagedFields(u, opts.FieldManager, applied)
	if old == nil {
		return c.commit(gvr, u, dryRun), nil
	}
	return c.replace(gvr, old, u, dryRun), nil
}

// ownedFields reads which data keys, labels and annotations a manager
// applied, from its managedFields entry.
func ownedFields(u *unstructured.Unstructured, manager string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, mf := range u.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var f map[string]map[string]any
		_ = json.Unmarshal(mf.FieldsV1.GetRawBytes(), &f)
		for top, keys := range f {
			field := strings.TrimPrefix(top, "f:")
			if field == "metadata" {
				for sub, v := range keys {
					if m, ok := v.(map[string]any); ok {
						for k := range m {
							addOwned(out, strings.TrimPrefix(sub, "f:"), strings.TrimPrefix(k, "f:"))
						}
					}
				}
				continue
			}
			for k := range keys {
				addOwned(out, field, strings.TrimPrefix(k, "f:"))
			}
		}
	}
	return out
}

func addOwned(out map[string]map[string]bool, field, k string) {
	if out[field] == nil {
		out[field] = map[string]bool{}
	}
	out[field][k] = true
}

// setManagedFields records what the manager applied, in FieldsV1's shape
// for the keys of each top-level map and of labels and annotations.
func setManagedFields(u *unstructured.Unstructured, manager string, applied *unstructured.Unstructured) {
	fieldSet := map[string]any{}
	keysOf := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k := range m {
			out["f:"+k] = map[string]any{}
		}
		return out
	}
	for field, value := range applied.Object {
		switch field {
		case "apiVersion", "kind":
		case "metadata":
			md := map[string]any{}
			if l := applied.GetLabels(); len(l) > 0 {
				md["f:labels"] = keysOf(stringMapAny(l))
			}
			if a := applied.GetAnnotations(); len(a) > 0 {
				md["f:annotations"] = keysOf(stringMapAny(a))
			}
			if len(md) > 0 {
				fieldSet["f:metadata"] = md
			}
		default:
			if m, ok := value.(map[string]any); ok {
				fieldSet["f:"+field] = keysOf(m)
			} else {
				fieldSet["f:"+field] = map[string]any{}
			}
		}
	}
	raw, _ := json.Marshal(fieldSet)
	entries := []metav1.ManagedFieldsEntry{}
	for _, mf := range u.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply {
			entries = append(entries, mf)
		}
	}
	fv := metav1.FieldsV1{}
	fv.SetRawBytes(raw)
	entries = append(entries, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: applied.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &fv})
	u.SetManagedFields(entries)
}

func stringMapAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toUnstructured converts a typed object of client-go's scheme (or an
// unstructured one) with its apiVersion and kind set.
func toUnstructured(o runtime.Object) *unstructured.Unstructured {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.DeepCopy()
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		panic(fmt.Sprintf("kubetest: %T is not in client-go's scheme: %v", o, err))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		panic(fmt.Sprintf("kubetest: convert %T: %v", o, err))
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

// toTyped converts a stored object back to client-go's type for its kind.
func toTyped(u *unstructured.Unstructured) (runtime.Object, error) {
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// resourceFor is the plural resource of a kind, as the API names it.
func resourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural
}

// typedReaction serves the typed client from the same store.
func (c *Cluster) typedReaction(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr, ns := action.GetResource(), action.GetNamespace()
	var u *unstructured.Unstructured
	var err error
	switch a := action.(type) {
	case clienttesting.GetActionImpl:
		u, err = c.get(gvr, ns, a.GetName())
	case clienttesting.ListActionImpl:
		items, err := c.list(gvr, ns, a.ListOptions)
		if err != nil {
			return true, nil, err
		}
		list, err := scheme.Scheme.New(a.GetKind().GroupVersion().WithKind(strings.TrimSuffix(a.GetKind().Kind, "List") + "List"))
		if err != nil {
			return true, nil, err
		}
		objs := make([]runtime.Object, 0, len(items))
		for i := range items {
			o, err := toTyped(&items[i])
			if err != nil {
				return true, nil, err
			}
			objs = append(objs, o)
		}
		return true, list, meta.SetList(list, objs)
	case clienttesting.CreateActionImpl:
		if a.GetSubresource() == "eviction" {
			// An eviction deletes the Pod unless Fail("evict", ...) refuses it,
			// as a PodDisruptionBudget would (429).
			name := a.GetObject().(metav1.Object).GetName()
			if err := c.fail("evict", gvr, name); err != nil {
				return true, nil, err
			}
			return true, nil, c.delete(gvr, ns, name, isDryRun(a.CreateOptions.DryRun))
		}
		u, err = c.create(gvr, ns, toUnstructured(a.GetObject()), isDryRun(a.CreateOptions.DryRun))
	case clienttesting.UpdateActionImpl:
		u, err = c.update(gvr, ns, toUnstructured(a.GetObject()), isDryRun(a.UpdateOptions.DryRun))
	case clienttesting.DeleteActionImpl:
		return true, nil, c.delete(gvr, ns, a.GetName(), isDryRun(a.DeleteOptions.DryRun))
	case clienttesting.PatchActionImpl:
		if a.GetPatchType() == types.ApplyPatchType {
			u, err = c.apply(gvr, ns, a.GetName(), a.GetPatch(), a.PatchOptions)
		} else {
			u, err = c.mergePatch(gvr, ns, a.GetName(), a.GetPatch(), isDryRun(a.PatchOptions.DryRun))
		}
	default:
		return false, nil, nil // discovery and the like: the fake's own answer
	}
	if err != nil {
		return true, nil, err
	}
	obj, err := toTyped(u)
	return true, obj, err
}
