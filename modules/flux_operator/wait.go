package fluxoperator

import (
	"context"
	"fmt"
	"time"

	helmkube "helm.sh/helm/v3/pkg/kube"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// waitInterval is how often the release's resources are checked. Helm's
// own waiter checks every 2 s, which alone made an install take ~1.5 s
// longer than the Pods did to become ready.
const waitInterval = 250 * time.Millisecond

// fastWaitClient is Helm's kube client with Wait and WaitWithJobs polling
// at waitInterval, with the same readiness checks. Everything else,
// including what atomic does when a wait fails, stays Helm's.
type fastWaitClient struct {
	*helmkube.Client
	typed kubernetes.Interface
}

func (c *fastWaitClient) Wait(resources helmkube.ResourceList, timeout time.Duration) error {
	return c.wait(helmkube.NewReadyChecker(c.typed, c.Log, helmkube.PausedAsReady(true)), resources, timeout)
}

func (c *fastWaitClient) WaitWithJobs(resources helmkube.ResourceList, timeout time.Duration) error {
	return c.wait(helmkube.NewReadyChecker(c.typed, c.Log, helmkube.PausedAsReady(true), helmkube.CheckJobs(true)), resources, timeout)
}

func (c *fastWaitClient) wait(checker helmkube.ReadyChecker, resources helmkube.ResourceList, timeout time.Duration) error {
	var waiting string
	ready, err := kube.Poll(context.Background(), waitInterval, timeout, func(ctx context.Context) (bool, error) {
		for _, r := range resources {
			// An error reading a resource is retried, as Helm's waiter does.
			ok, err := checker.IsReady(ctx, r)
			if err != nil && ctx.Err() != nil {
				return false, ctx.Err() // cut by the deadline: keep what was awaited
			}
			if err != nil || !ok {
				waiting = fmt.Sprintf("%s %s/%s", r.Mapping.GroupVersionKind.Kind, r.Namespace, r.Name)
				return false, nil
			}
		}
		return true, nil
	}, nil)
	if err != nil {
		return err
	}
	if !ready {
		return fmt.Errorf("timed out after %s waiting for %s to be ready", timeout, waiting)
	}
	return nil
}

// The optional interfaces Helm's actions look for stay available.
var (
	_ helmkube.Interface              = (*fastWaitClient)(nil)
	_ helmkube.InterfaceExt           = (*fastWaitClient)(nil)
	_ helmkube.InterfaceThreeWayMerge = (*fastWaitClient)(nil)
	_ helmkube.InterfaceLogs          = (*fastWaitClient)(nil)
	_ helmkube.InterfaceResources     = (*fastWaitClient)(nil)
)
