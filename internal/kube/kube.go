// Package kube is what the controller-side modules share for talking to
// the cluster: connection options, clients from a kubeconfig, server-side
// apply with the collection's field manager, and the rule that objects
// Flux has adopted are left alone.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// FieldManager owns the fields the collection applies.
const FieldManager = "gitops.k3s_flux"

// Labels Flux puts on what it reconciles; an object carrying one has been
// adopted by Flux and the modules leave it alone unless forced.
var fluxOwnerLabels = []string{"kustomize.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/name"}

// Resources more than one module reads.
var (
	FluxInstanceGVR = schema.GroupVersionResource{Group: "fluxcd.controlplane.io", Version: "v1", Resource: "fluxinstances"}
	DeploymentGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// FluxInstanceName is the only name the Flux Operator accepts for a
// FluxInstance.
const FluxInstanceName = "flux"

// The FluxInstance resource, as the Flux Operator's CRD defines it.
const (
	FluxInstanceKind       = "FluxInstance"
	FluxInstanceAPIVersion = "fluxcd.controlplane.io/v1"
	FluxInstanceCRD        = "fluxinstances.fluxcd.controlplane.io"
)

// ConnectionOptions are the options every cluster module takes, named as
// in kubernetes.core.
func ConnectionOptions() []ansible.Option {
	return []ansible.Option{
		{Name: "kubeconfig", Type: ansible.TypePath,
			Description: []string{"Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config)."}},
		{Name: "context",
			Description: []string{"The kubeconfig context to use. Defaults to the current context."}},
		{Name: "host",
			Description: []string{"The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches another server while the endpoint's is down)."}},
		{Name: "validate_certs", Type: ansible.TypeBool, Aliases: []string{"verify_ssl"},
			Description: []string{"Whether to verify the API server's certificate. Defaults to what the kubeconfig says."}},
		{Name: "ca_cert", Type: ansible.TypePath, Format: ansible.FormatFile, Aliases: []string{"ssl_ca_cert"},
			Description: []string{"A CA bundle to verify the API server with, instead of the kubeconfig's."}},
	}
}

// WaitOptions are wait and wait_timeout (alias timeout), named and
// defaulted as in kubernetes.core, for every module that waits; what it
// waits for is the module's to say.
func WaitOptions(waitDefault bool, waitFor string) []ansible.Option {
	return []ansible.Option{
		{Name: "wait", Type: ansible.TypeBool, Default: waitDefault, Description: []string{waitFor}},
		{Name: "wait_timeout", Type: ansible.TypeInt, Default: 300, Positive: true, Aliases: []string{"timeout"},
			Description: []string{"How many seconds to wait. A wait outlasts API server restarts and other transient errors until then."}},
	}
}

// Connection holds the connection options as a module decodes them.
type Connection struct {
	Kubeconfig    string `json:"kubeconfig"`
	Context       string `json:"context"`
	Host          string `json:"host"`
	ValidateCerts *bool  `json:"validate_certs"`
	CACert        string `json:"ca_cert"`
}

// RESTConfig loads the client configuration the options describe.
func (c Connection) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		if _, err := os.Stat(c.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
		}
		rules.ExplicitPath = c.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context, ClusterInfo: clientcmdapi.Cluster{Server: c.Host}}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if c.ValidateCerts != nil && !*c.ValidateCerts {
		cfg.TLSClientConfig.Insecure = true
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, ""
	}
	if c.CACert != "" {
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = c.CACert, nil
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "gitops.k3s_flux"
	return cfg, nil
}

// PlanWithoutCluster tells whether a check-mode run must plan as for a new,
// empty cluster because the kubeconfig the task names does not exist yet
// (a first run, before role k8s_cluster has fetched it), and warns so.
func (c Connection) PlanWithoutCluster(req *ansible.Request) bool {
	if !req.CheckMode || c.Kubeconfig == "" {
		return false
	}
	if _, err := os.Stat(c.Kubeconfig); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	req.Warn("kubeconfig %s does not exist yet (a first run in check mode): planned as for a new, empty cluster", c.Kubeconfig)
	return true
}

// Connector makes the clients for a connection. The modules take one, so
// that main passes Connect and the unit tests an in-memory cluster
// (internal/kube/kubetest).
type Connector func(Connection) (*Clients, error)

// Connect is the real Connector.
func Connect(c Connection) (*Clients, error) { return c.NewClients() }

// With binds a cluster module's logic to the Connector it reaches its
// cluster with: With(run, Connect) in main.
func With(run func(context.Context, *ansible.Request, Connector) (*ansible.Result, error), connect Connector) ansible.RunFunc {
	return func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		return run(ctx, req, connect)
	}
}

// Clients are the typed and dynamic clients of one connection.
type Clients struct {
	Config  *rest.Config
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewClients connects with the options.
func (c Connection) NewClients() (*Clients, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Clients{Config: cfg, Typed: typed, Dynamic: dyn}, nil
}

// Apply server-side applies obj as the collection's field manager, taking
// over conflicting fields; with dryRun nothing is persisted.
func (c *Clients) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	force := true
	// Strict: a field the schema does not know (spec.sync.pth) is an error
	// naming it, not silently pruned and then reported unchanged forever.
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := c.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
	if err != nil {
		return nil, fmt.Errorf("apply %s %s: %w", obj.GetKind(), ObjectName(obj), err)
	}
	return out, nil
}

// Get returns the object, or nil when it does not exist.
func (c *Clients) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := c.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", gvr.Resource, joinName(namespace, name), err)
	}
	return obj, nil
}

// FluxOwned tells whether Flux has adopted the object, and by which label.
func FluxOwned(obj metav1.Object) (string, bool) {
	for _, l := range fluxOwnerLabels {
		if v, ok := obj.GetLabels()[l]; ok {
			return l + "=" + v, true
		}
	}
	return "", false
}

// ObjectName is namespace/name, or name for cluster-scoped objects.
func ObjectName(obj metav1.Object) string { return joinName(obj.GetNamespace(), obj.GetName()) }

func joinName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// IsUnreachable tells whether err means the API server could not be
// reached (as opposed to refusing a request).
func IsUnreachable(err error) bool {
	var status apierrors.APIStatus
	return err != nil && !errors.As(err, &status)
}
