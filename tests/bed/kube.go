package bed

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// RESTConfig is the admin client configuration.
func (b *Bed) RESTConfig() (*rest.Config, error) {
	path := b.Kubeconfig
	if b.nodes != nil {
		if path = b.nodes.Kubeconfig(); path == "" {
			return nil, errors.New("no k3s server of the test bed answered yet")
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load test bed kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// Clients returns typed and dynamic admin clients.
func (b *Bed) Clients() (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := b.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	return kc, dc, err
}

// AddNode registers a Node that kwok plays the kubelet for, so that Pods
// can be scheduled and become Ready.
func (b *Bed) AddNode(ctx context.Context, name string) error {
	kc, _, err := b.Clients()
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
	}}
	if _, err := kc.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return WaitNodeReady(ctx, kc, name)
}

// NodeReady tells whether the Node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// WaitNodeReady waits until the named Node exists and is Ready.
func WaitNodeReady(ctx context.Context, kc kubernetes.Interface, name string) error {
	return waitFor(ctx, "node "+name+" Ready", 200*time.Millisecond, func() error {
		n, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !NodeReady(n) {
			return fmt.Errorf("node %s not Ready", name)
		}
		return nil
	})
}

// Apply server-side applies one YAML object with the test bed's field
// manager.
func (b *Bed) Apply(ctx context.Context, gvr schema.GroupVersionResource, manifest string) (*unstructured.Unstructured, error) {
	_, dc, err := b.Clients()
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	return dc.Resource(gvr).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: "testbed", Force: &force})
}

// Condition returns the status, reason and message of a condition of an
// object, or an error when the object or condition is missing.
func (b *Bed) Condition(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, condition string) (status, reason, message string, err error) {
	_, dc, err := b.Clients()
	if err != nil {
		return "", "", "", err
	}
	obj, err := dc.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", "", err
	}
	if status, reason, message, ok := conditionOf(obj, condition); ok {
		return status, reason, message, nil
	}
	return "", "", "", fmt.Errorf("%s %s/%s has no %s condition yet", gvr.Resource, namespace, name, condition)
}

// conditionOf is the status, reason and message of an object's condition;
// ok is false when it has none of that type.
func conditionOf(obj *unstructured.Unstructured, condition string) (status, reason, message string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == condition {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"]), true
		}
	}
	return "", "", "", false
}

// WaitReady waits until the object's Ready condition is True.
func (b *Bed) WaitReady(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	return waitFor(ctx, fmt.Sprintf("%s %s/%s Ready", gvr.Resource, namespace, name), 250*time.Millisecond, func() error {
		status, reason, msg, err := b.Condition(ctx, gvr, namespace, name, "Ready")
		if err != nil {
			return err
		}
		if status != "True" {
			return fmt.Errorf("Ready=%s %s: %s", status, reason, msg)
		}
		return nil
	})
}

// RequestReconcile nudges a Flux object to reconcile now, as
// `flux reconcile` does, with the reconcile.fluxcd.io/requestedAt annotation.
func (b *Bed) RequestReconcile(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	_, dc, err := b.Clients()
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	_, err = dc.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Resources the tests use.
var (
	FluxInstanceGVR  = schema.GroupVersionResource{Group: "fluxcd.controlplane.io", Version: "v1", Resource: "fluxinstances"}
	GitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	SecretGVR        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	NamespaceGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)
