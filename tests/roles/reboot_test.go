package roles

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// roleTasks reads a task file of role k8s_cluster, in the order the tasks
// run: a block, then its tasks, its rescue's and its always'.
func roleTasks(t *testing.T, name string) []map[string]any {
	t.Helper()
	var tasks []map[string]any
	readYAML(t, filepath.Join(golden.RepoRoot(t), "roles", "k8s_cluster", "tasks", name), &tasks)
	return flatten(tasks)
}

func flatten(tasks []map[string]any) []map[string]any {
	var out []map[string]any
	for _, task := range tasks {
		out = append(out, task)
		for _, part := range []string{"block", "rescue", "always"} {
			out = append(out, flatten(asList(task[part]))...)
		}
	}
	return out
}

// asList is a task list of a YAML value (a block's tasks): its mappings.
func asList(v any) []map[string]any {
	var out []map[string]any
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// taskIndex is the index of the first task for which match holds, or -1.
func taskIndex(tasks []map[string]any, match func(map[string]any) bool) int {
	for i, task := range tasks {
		if match(task) {
			return i
		}
	}
	return -1
}

func calls(module string) func(map[string]any) bool {
	return func(task map[string]any) bool { _, ok := task[module]; return ok }
}

func includes(file string) func(map[string]any) bool {
	return func(task map[string]any) bool {
		for _, k := range []string{"ansible.builtin.include_tasks", "ansible.builtin.import_tasks"} {
			switch v := task[k].(type) {
			case string:
				if v == file {
					return true
				}
			case map[string]any:
				if v["file"] == file {
					return true
				}
			}
		}
		return false
	}
}

// text is a task's field as one string (a list's items joined), for
// asserting what a condition or message refers to.
func text(v any) string {
	if list, ok := v.([]any); ok {
		var parts []string
		for _, x := range list {
			parts = append(parts, text(x))
		}
		return strings.Join(parts, " and ")
	}
	s, _ := v.(string)
	return s
}

// TestRebootStopsUnlessEveryHostAnswers: an unreachable host drops out of
// the play silently, so reboot.yml checks, after the first read and before
// any reboot, that every host of the play answered it, and stops the play
// when one did not (the next server's reboot would take etcd below quorum).
func TestRebootStopsUnlessEveryHostAnswers(t *testing.T) {
	for file, one := range map[string]string{"reboot.yml": "reboot_one.yml", "rotate_certs.yml": "rotate_certs_one.yml"} {
		t.Run(file, func(t *testing.T) { stopsUnlessEveryHostAnswers(t, file, one) })
	}
}

func stopsUnlessEveryHostAnswers(t *testing.T, file, one string) {
	tasks := roleTasks(t, file)
	read := taskIndex(tasks, calls("gitops.k3s_flux.k3s_node_info"))
	rollout := taskIndex(tasks, includes(one))
	require.GreaterOrEqual(t, read, 0, "the first read")
	require.Greater(t, rollout, read, "the rollout after it")
	check := taskIndex(tasks[read+1:rollout], func(task map[string]any) bool {
		a, ok := task["ansible.builtin.assert"].(map[string]any)
		that := text(a["that"])
		return ok && strings.Contains(that, "ansible_play_hosts_all") && strings.Contains(that, "difference(ansible_play_hosts)")
	})
	require.GreaterOrEqual(t, check, 0, "a check between the read and the rollout that every host of the play answered")
	task := tasks[read+1+check]
	assert.Equal(t, true, task["any_errors_fatal"], "it stops the play")
	assert.Equal(t, true, task["run_once"])
	assert.NotContains(t, tasks[read], "ignore_unreachable")
	assert.NotContains(t, tasks[read], "ignore_errors")
}

// TestRebootKeepsQuorum: before a server's reboot (before its drain) the
// other servers are read and the reboot refused unless they hold a
// majority of etcd's members; remove_node runs the same check (one rule,
// etcd_quorum.yml), and a server that does not answer counts as a member
// down instead of dropping the play's host out.
func TestRebootKeepsQuorum(t *testing.T) {
	one := roleTasks(t, "reboot_one.yml")
	quorum := taskIndex(one, includes("etcd_quorum.yml"))
	require.GreaterOrEqual(t, quorum, 0, "reboot_one.yml includes etcd_quorum.yml")
	assert.Equal(t, "reboot", one[quorum]["vars"].(map[string]any)["_k8s_cluster_quorum_for"])
	require.Positive(t, quorum, "in a block")
	assert.Contains(t, text(one[quorum-1]["when"]), "_k8s_cluster_is_server", "the block's condition")
	drain := taskIndex(one, calls("gitops.k3s_flux.node_drain"))
	require.Greater(t, drain, quorum, "the check comes before the drain and the reboot")

	rotate := roleTasks(t, "rotate_certs_one.yml")
	at := taskIndex(rotate, includes("etcd_quorum.yml"))
	require.Positive(t, at, "rotate_certs_one.yml includes etcd_quorum.yml, in a block")
	assert.Equal(t, "rotation", rotate[at]["vars"].(map[string]any)["_k8s_cluster_quorum_for"])
	assert.Contains(t, text(rotate[at-1]["when"]), "_k8s_cluster_is_server", "the block's condition")
	assert.Less(t, at, taskIndex(rotate, calls("gitops.k3s_flux.k3s_node")), "before k3s is restarted")

	remove := roleTasks(t, "remove.yml")
	at = taskIndex(remove, includes("etcd_quorum.yml"))
	require.GreaterOrEqual(t, at, 0, "remove.yml includes etcd_quorum.yml")
	assert.Equal(t, "removal", remove[at]["vars"].(map[string]any)["_k8s_cluster_quorum_for"])
	assert.Less(t, at, taskIndex(remove, calls("gitops.k3s_flux.node_drain")), "before the drain")

	check := roleTasks(t, "etcd_quorum.yml")
	read := taskIndex(check, calls("gitops.k3s_flux.k3s_node_info"))
	require.GreaterOrEqual(t, read, 0)
	assert.Equal(t, true, check[read]["ignore_unreachable"], "a server that does not answer is counted, not dropped")
	assert.Equal(t, "{{ item }}", check[read]["delegate_to"])
	refuse := taskIndex(check, calls("ansible.builtin.assert"))
	require.Greater(t, refuse, read)
	assert.Equal(t, true, check[refuse]["any_errors_fatal"], "a refusal stops the play")
}

// TestRebootAsksUnlessNamedOneByOne: reboot.yml asks unless -l names every
// host one by one (by the same test as remove_node's refusal of groups and
// patterns) or k8s_cluster_reboot_confirmed is set; a group or pattern in
// -l (k3s_controllers, node*) no longer skips the question.
func TestRebootAsksUnlessNamedOneByOne(t *testing.T) {
	tasks := roleTasks(t, "reboot.yml")
	ask := taskIndex(tasks, calls("ansible.builtin.pause"))
	require.GreaterOrEqual(t, ask, 0, "reboot.yml asks")
	when := text(tasks[ask]["when"])
	assert.Contains(t, when, "_k8s_cluster_reboot_named_one_by_one")
	assert.Contains(t, when, "k8s_cluster_reboot_confirmed")
	stop := taskIndex(tasks, calls("ansible.builtin.assert"))
	require.Greater(t, stop, ask)
	assert.Contains(t, text(tasks[stop]["ansible.builtin.assert"].(map[string]any)["that"]), "_k8s_cluster_reboot_named_one_by_one")
	assert.Equal(t, true, tasks[stop]["any_errors_fatal"])
	assert.Less(t, stop, taskIndex(tasks, includes("reboot_one.yml")))

	var vars map[string]any
	readYAML(t, filepath.Join(golden.RepoRoot(t), "roles", "k8s_cluster", "vars", "main.yml"), &vars)
	assert.Contains(t, text(vars["_k8s_cluster_reboot_named_one_by_one"]), "_k8s_cluster_limit_patterns")
	// remove_node refuses what reboot asks about: one definition of a group or pattern in -l.
	refusal := roleTasks(t, "remove.yml")[0]
	assert.Contains(t, text(refusal["ansible.builtin.assert"].(map[string]any)["that"]), "_k8s_cluster_limit_patterns")

	var play []map[string]any
	readYAML(t, filepath.Join(golden.RepoRoot(t), "playbooks", "reboot.yml"), &play)
	require.Len(t, play, 1)
	for _, task := range play[0]["tasks"].([]any) {
		assert.NotContains(t, text(task.(map[string]any)["when"]), "ansible_limit is not defined", "any -l skipped the question")
	}
}

// TestDayTwoKubeconfig: remove_node, reboot and the rejoin reach the API
// through _k8s_cluster_kubeconfig, read from a server (kubeconfig.yml)
// before any task that uses it when k8s.yml's is missing, and removed
// (kubeconfig_done.yml) on every way out, so a failure leaves no copy
// behind: in an always, or, for the rolling reboot (no always around it:
// ansible-core 2.14 lets the other hosts go on after a failure under
// any_errors_fatal there), after the rollout and in each rescue of
// reboot_one.yml, whose every failure is rescued.
func TestDayTwoKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		file, user string
		rollout    bool // one node at a time, no always around it
	}{
		{"remove.yml", "remove.yml", false}, {"reboot.yml", "reboot_one.yml", true}, {"rejoin.yml", "rejoin.yml", false},
		{"rotate_certs.yml", "rotate_certs_one.yml", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tasks := roleTasks(t, tc.file)
			read := taskIndex(tasks, includes("kubeconfig.yml"))
			require.GreaterOrEqual(t, read, 0, "includes kubeconfig.yml")
			done := taskIndex(tasks, includes("kubeconfig_done.yml"))
			require.Greater(t, done, read, "and kubeconfig_done.yml after it")
			cleanedIn := func(tasks []map[string]any, part string) bool {
				for _, task := range tasks {
					for _, x := range asList(task[part]) {
						if includes("kubeconfig_done.yml")(x) {
							return true
						}
					}
				}
				return false
			}
			if tc.rollout {
				assert.Equal(t, taskIndex(tasks, includes(tc.user))+1, done, "right after the rollout")
				for _, task := range tasks[done+1:] {
					assert.NotContains(t, fmt.Sprint(task), "{{ _k8s_cluster_kubeconfig }}", "%s: after the kubeconfig was removed", task["name"])
				}
				assert.False(t, cleanedIn(tasks, "always"), "no always around the rollout")
				var top []map[string]any
				readYAML(t, filepath.Join(golden.RepoRoot(t), "roles", "k8s_cluster", "tasks", tc.user), &top)
				for _, task := range top {
					if task["block"] != nil {
						assert.True(t, cleanedIn([]map[string]any{task}, "rescue"), "%s: removed in its rescue", task["name"])
					} else {
						assert.NotContains(t, task, "ansible.builtin.include_tasks", "%s: every failure of %s is rescued", task["name"], tc.user)
					}
				}
			} else {
				assert.True(t, cleanedIn(tasks, "always"), "kubeconfig_done.yml runs in an always")
			}
			used := 0
			for _, task := range roleTasks(t, tc.user) {
				for module, args := range task {
					if a, ok := args.(map[string]any); ok && strings.HasPrefix(module, "gitops.k3s_flux.") && a["kubeconfig"] != nil {
						assert.Equal(t, "{{ _k8s_cluster_kubeconfig }}", a["kubeconfig"], "%s in %s", task["name"], tc.user)
						used++
					}
				}
			}
			assert.Positive(t, used)
		})
	}
}
