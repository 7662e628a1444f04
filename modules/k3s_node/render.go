package k3snodemodule

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

// renderers are the modules k3s_node runs first, in this order, when their
// option holds their arguments: k3s's files before the service that reads
// them.
var renderers = []struct {
	option   string
	module   *ansible.Module
	converge func(context.Context, *ansible.Request) (k3sconfig.Converged, error)
}{
	{"k3s_config", k3sconfig.Module, k3sconfig.Converge},
	{"k3s_registries", k3sconfig.RegistriesModule, k3sconfig.ConvergeRegistries},
}

// step is one renderer's run: its result as a task of its own would have
// returned it, and what it did, typed.
type step struct {
	option string
	ansible.Step
	converged k3sconfig.Converged
}

// render runs the renderers whose options are given, in this process; it
// stops at the first that fails and returns it too (nil when none failed).
// With plan, each runs in check mode: what it would write, nothing written.
func render(ctx context.Context, req *ansible.Request, plan bool) (steps []step, failed *step) {
	runStep := req.RunStep
	if plan {
		runStep = req.PlanStep
	}
	for _, r := range renderers {
		args, ok := req.Params[r.option].(map[string]any)
		if !ok {
			continue
		}
		s := step{option: r.option}
		s.Step = runStep(ctx, r.module, func(ctx context.Context, sub *ansible.Request) (*ansible.Result, error) {
			c, err := r.converge(ctx, sub)
			s.converged = c
			return c.Result, err
		}, args)
		steps = append(steps, s)
		if s.Err != nil {
			return steps, &steps[len(steps)-1]
		}
	}
	return steps, nil
}

func restartNeeded(steps []step) bool {
	for _, s := range steps {
		if s.converged.RestartNeeded {
			return true
		}
	}
	return false
}

// addSteps puts the renderers' results into res: each under its option as
// the module's own result would be, without the diff, warnings and
// invocation, which go to the task's own (their diffs first; the task's
// invocation holds their arguments, masked).
func addSteps(res *ansible.Result, steps []step) {
	var diffs []ansible.Diff
	for _, s := range steps {
		diffs = append(diffs, s.Result.Diff...)
		res.Warnings = append(res.Warnings, s.Warnings...)
		if s.Result.Changed {
			res.Changed = true
		}
		res.Set(s.option, s.Fields())
	}
	res.Diff = append(diffs, res.Diff...)
}
