package docs_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/docs"
	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

func demo() *ansible.Module {
	return &ansible.Module{
		Name: "demo", ShortDescription: "Demo", Description: []string{"Does things."}, Author: []string{"someone"},
		Spec: ansible.Spec{
			Options: []ansible.Option{
				{Name: "state", Description: []string{"Wanted state."}, Choices: []any{"present", "absent"}, Default: "present"},
				{Name: "wait", Type: ansible.TypeBool, Default: false, Description: []string{"Wait."}},
				{Name: "wait_timeout", Type: ansible.TypeInt, Default: 120, Positive: true, Description: []string{"Seconds."}},
				{Name: "src", Type: ansible.TypePath, Aliases: []string{"path"}, Description: []string{"A file."}},
				{Name: "token", NoLog: true, Description: []string{"A secret."}},
				{Name: "names", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{}, Description: []string{"Names."}},
				{Name: "options", Type: ansible.TypeDict, Default: map[string]any{}, Description: []string{"Sub-options."},
					Options: []ansible.Option{
						{Name: "force", Type: ansible.TypeBool, Default: false, Description: []string{"Force."}},
						{Name: "grace", Type: ansible.TypeInt, Description: []string{"Seconds."}},
						{Name: "mode", Choices: []any{"a", "b"}, Description: []string{"A mode."}},
					},
					MutuallyExclusive: [][]string{{"force", "grace"}},
					RequiredIf:        []ansible.RequiredIf{{Key: "mode", Value: "a", Requirements: []string{"grace"}}},
				},
			},
			MutuallyExclusive: [][]string{{"src", "names"}},
			RequiredIf:        []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"src", "names"}, AnyOf: true}},
		},
		CheckMode: "full",
		DiffMode:  "full",
		Examples:  "- name: Demo\n  demo:\n    state: present\n",
		Returns:   []ansible.Return{{Name: "path", Description: []string{"The path."}, Returned: "always", Type: "str", Sample: "/x"}},
	}
}

// TestPythonRendersSpecAndDocs: the docs and the argument spec, with every
// kind of option and constraint, as ansible-doc and validate-modules read
// them (testdata/demo.py; make docs rewrites it).
func TestPythonRendersSpecAndDocs(t *testing.T) {
	out, err := docs.Python(demo(), "controller", "the controller")
	require.NoError(t, err)
	golden.File(t, filepath.Join("testdata", "demo.py.golden"), out)
}

func TestPythonRefuses(t *testing.T) {
	for name, bend := range map[string]func(m *ansible.Module){
		"an option without a description": func(m *ansible.Module) {
			m.Spec.Options = append(m.Spec.Options, ansible.Option{Name: "undocumented"})
		},
		"a triple quote in the examples": func(m *ansible.Module) { m.Examples = "- x: \"\"\"\n" },
		"a line starting with assert": func(m *ansible.Module) {
			m.Examples = "- name: Check\n  ansible.builtin.debug:\n    msg: >-\n      assert it\n"
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := demo()
			bend(m)
			_, err := docs.Python(m, "controller", "the controller")
			assert.Error(t, err)
		})
	}
}
