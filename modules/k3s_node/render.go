package k3snodemodule

import (
	"context"
	"encoding/json"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

// renderers are the modules k3s_node runs first, in this order, when their
// option holds their arguments: k3s's files before the service that reads
// them.
var renderers = []struct {
	option string
	module *ansible.Module
	run    ansible.RunFunc
}{
	{"k3s_config", k3sconfig.Module, k3sconfig.Run},
	{"k3s_registries", k3sconfig.RegistriesModule, k3sconfig.RunRegistries},
}

// step is one renderer's result, as Ansible would have received it from a
// task of its own (secrets masked).
type step struct {
	option string
	result map[string]any
}

// render runs the renderers whose options are given, in this process; it
// stops at the first that fails and returns it too (nil when none failed).
func render(ctx context.Context, req *ansible.Request) (steps []step, failed *step) {
	for _, r := range renderers {
		args, ok := req.Params[r.option].(map[string]any)
		if !ok {
			continue
		}
		steps = append(steps, step{option: r.option, result: req.Call(ctx, r.module, r.run, args)})
		if f, _ := steps[len(steps)-1].result["failed"].(bool); f {
			return steps, &steps[len(steps)-1]
		}
	}
	return steps, nil
}

func restartNeeded(steps []step) bool {
	for _, s := range steps {
		if restart, _ := s.result["restart_needed"].(bool); restart {
			return true
		}
	}
	return false
}

// addSteps puts the renderers' results into res: each under its option,
// without the diff, warnings and invocation, which go to the task's own
// (their diffs first; the task's invocation holds their arguments, masked).
func addSteps(res *ansible.Result, steps []step) {
	var diffs []ansible.Diff
	for _, s := range steps {
		out := map[string]any{}
		for k, v := range s.result {
			switch k {
			case "diff":
				diffs = append(diffs, diffsOf(v)...)
			case "warnings":
				for _, w := range asList(v) {
					if text, ok := w.(string); ok {
						res.Warnings = append(res.Warnings, text)
					}
				}
			case "invocation":
			default:
				out[k] = v
			}
		}
		if changed, _ := s.result["changed"].(bool); changed {
			res.Changed = true
		}
		res.Set(s.option, out)
	}
	res.Diff = append(diffs, res.Diff...)
}

// diffsOf reads a result's diff: one before/after dict, or a list of them.
func diffsOf(v any) []ansible.Diff {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var many []ansible.Diff
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	var one ansible.Diff
	if json.Unmarshal(raw, &one) == nil {
		return []ansible.Diff{one}
	}
	return nil
}

func asList(v any) []any {
	list, _ := v.([]any)
	return list
}
