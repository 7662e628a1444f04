package ansible_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// A module run as a step of another: its typed result and failure, r's
// modes, and its secrets masked in r's whole output, also when it fails.
func TestRunStep(t *testing.T) {
	const stepSecret, outerSecret = "step-token-7f3a", "outer-token-2b9c"
	outer := &ansible.Module{Name: "outer", Spec: ansible.Spec{Options: []ansible.Option{
		// No NoLogValues hook: the step alone tells its secrets.
		{Name: "inner", Type: ansible.TypeDict},
		{Name: "token", NoLog: true},
	}}}
	var got ansible.Step
	for name, tc := range map[string]struct {
		inner   map[string]any
		run     ansible.RunFunc
		verbose bool
		check   func(t *testing.T, res map[string]any)
	}{
		"a result": {
			inner: map[string]any{"name": "n", "token": stepSecret},
			run: func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
				req.Warn("careful")
				req.Progress("step progress")
				res := &ansible.Result{Changed: true, Diff: []ansible.Diff{{Before: "a", After: "b " + stepSecret}}}
				res.Set("check_mode", req.CheckMode)
				res.Set("echo", req.Params["token"])
				return res, nil
			},
			check: func(t *testing.T, res map[string]any) {
				require.NoError(t, got.Err)
				assert.True(t, got.Result.Changed)
				assert.Equal(t, true, got.Result.Values["check_mode"], "the outer task's check mode")
				assert.Equal(t, []string{"careful"}, got.Warnings)
				assert.Empty(t, got.Progress, "quiet without -v")
			},
		},
		"at -v, its progress": {
			inner: map[string]any{"name": "n"},
			run: func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
				req.Progress("step progress")
				return nil, nil
			},
			verbose: true,
			check: func(t *testing.T, res map[string]any) {
				require.NoError(t, got.Err)
				assert.NotNil(t, got.Result, "never nil")
				require.Len(t, got.Progress, 1)
			},
		},
		"bad arguments": {
			inner: map[string]any{"token": stepSecret},
			run:   func(context.Context, *ansible.Request) (*ansible.Result, error) { panic("not run") },
			check: func(t *testing.T, res map[string]any) {
				assert.EqualError(t, got.Err, "missing required arguments: name")
			},
		},
		"its run fails naming the secret": {
			inner: map[string]any{"name": "n", "token": stepSecret},
			run: func(context.Context, *ansible.Request) (*ansible.Result, error) {
				return &ansible.Result{}, errors.New("refused " + stepSecret)
			},
			check: func(t *testing.T, res map[string]any) {
				assert.ErrorContains(t, got.Err, "refused")
				assert.Equal(t, true, res["failed"])
			},
		},
		"it crashes": {
			inner: map[string]any{"name": "n"},
			run:   func(context.Context, *ansible.Request) (*ansible.Result, error) { panic("boom") },
			check: func(t *testing.T, res map[string]any) {
				assert.ErrorContains(t, got.Err, "module demo crashed (a bug; please report it): boom")
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			run := func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				inner, _ := req.Params["inner"].(map[string]any)
				got = req.RunStep(ctx, testModule, tc.run, inner)
				res := &ansible.Result{Changed: got.Result.Changed, Diff: got.Result.Diff}
				res.Set("inner", got.Result.Values)
				if got.Err != nil {
					return res, got.Err
				}
				return res, nil
			}
			args := map[string]any{"inner": tc.inner, "token": outerSecret, "_ansible_check_mode": true, "_ansible_diff": true}
			if tc.verbose {
				args["_ansible_verbosity"] = 1
			}
			res, _, raw := ansibletest.Run(t, outer, run, args)
			tc.check(t, res)
			assert.NotContains(t, raw, stepSecret, "the step's secret nowhere in the output")
			assert.NotContains(t, raw, outerSecret)
		})
	}
}

// PlanStep runs the step in check mode, whatever the outer task's; RunStep
// in the outer task's.
func TestPlanStep(t *testing.T) {
	inner := &ansible.Module{Name: "inner", Spec: ansible.Spec{Options: []ansible.Option{{Name: "name"}}}}
	outer := &ansible.Module{Name: "outer", Spec: ansible.Spec{Options: []ansible.Option{{Name: "inner", Type: ansible.TypeDict}}}}
	checkMode := func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
		res := &ansible.Result{}
		res.Set("check_mode", req.CheckMode)
		return res, nil
	}
	var planned, ran ansible.Step
	_, code, _ := ansibletest.Run(t, outer, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		planned = req.PlanStep(ctx, inner, checkMode, map[string]any{"name": "n"})
		ran = req.RunStep(ctx, inner, checkMode, map[string]any{"name": "n"})
		return &ansible.Result{}, nil
	}, map[string]any{"inner": map[string]any{}})
	require.Equal(t, 0, code)
	assert.Equal(t, true, planned.Result.Values["check_mode"])
	assert.Equal(t, false, ran.Result.Values["check_mode"])
}
