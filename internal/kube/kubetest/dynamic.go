package kubetest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// dynamicClient serves dynamic.Interface from the cluster's store.
type dynamicClient struct{ c *Cluster }

func (d dynamicClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &resource{c: d.c, gvr: gvr}
}

type resource struct {
	c   *Cluster
	gvr schema.GroupVersionResource
	ns  string
}

func (r *resource) Namespace(ns string) dynamic.ResourceInterface {
	cp := *r
	cp.ns = ns
	return &cp
}

func (r *resource) Create(_ context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, _ ...string) (*unstructured.Unstructured, error) {
	return r.c.create(r.gvr, r.ns, obj, isDryRun(opts.DryRun))
}

func (r *resource) Update(_ context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, _ ...string) (*unstructured.Unstructured, error) {
	return r.c.update(r.gvr, r.ns, obj, isDryRun(opts.DryRun))
}

func (r *resource) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.Update(ctx, obj, opts)
}

func (r *resource) Delete(_ context.Context, name string, opts metav1.DeleteOptions, _ ...string) error {
	return r.c.delete(r.gvr, r.ns, name, isDryRun(opts.DryRun))
}

func (r *resource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return fmt.Errorf("kubetest: deletecollection is not supported")
}

func (r *resource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	return r.c.get(r.gvr, r.ns, name)
}

func (r *resource) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	items, err := r.c.list(r.gvr, r.ns, opts)
	if err != nil {
		return nil, err
	}
	return &unstructured.UnstructuredList{Object: map[string]any{}, Items: items}, nil
}

func (r *resource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("kubetest: watch is not supported")
}

func (r *resource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	if pt == types.ApplyPatchType {
		return r.c.apply(r.gvr, r.ns, name, data, opts)
	}
	return r.c.mergePatch(r.gvr, r.ns, name, data, isDryRun(opts.DryRun))
}

func (r *resource) Apply(_ context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, _ ...string) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return r.c.apply(r.gvr, r.ns, name, data, opts.ToPatchOptions())
}

func (r *resource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return r.Apply(ctx, name, obj, opts)
}
