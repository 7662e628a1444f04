// Package roles holds the roles' argument specs (meta/argument_specs.yml,
// which Ansible validates every role variable against) to their defaults.
package roles

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

type argumentSpecs struct {
	ArgumentSpecs map[string]struct {
		Options map[string]struct {
			Type     string `json:"type"`
			Required bool   `json:"required"`
			Default  any    `json:"default"`
		} `json:"options"`
	} `json:"argument_specs"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, into), path)
}

// TestDefaultsMatchArgumentSpecs: every default is declared in the spec with
// the same value, every optional option has a default, and every variable
// carries the role's prefix.
func TestDefaultsMatchArgumentSpecs(t *testing.T) {
	roles, err := filepath.Glob(filepath.Join(golden.RepoRoot(t), "roles", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, roles)
	for _, dir := range roles {
		role := filepath.Base(dir)
		t.Run(role, func(t *testing.T) {
			var defaults map[string]any
			readYAML(t, filepath.Join(dir, "defaults", "main.yml"), &defaults)
			var specs argumentSpecs
			readYAML(t, filepath.Join(dir, "meta", "argument_specs.yml"), &specs)
			options := specs.ArgumentSpecs["main"].Options
			require.NotEmpty(t, options, "argument_specs.main.options")

			names := make([]string, 0, len(defaults))
			for name := range defaults {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				opt, ok := options[name]
				if !assert.True(t, ok, "defaults/main.yml sets %s, which argument_specs.yml does not declare", name) {
					continue
				}
				// A default computed from the inventory is no value of the option's type (antsibull-docs
				// refuses a Jinja expression as a bool's default): the description says it instead.
				if expr, ok := defaults[name].(string); ok && strings.HasPrefix(expr, "{{") && opt.Type != "str" && opt.Type != "path" && opt.Default == nil {
					continue
				}
				assert.Equal(t, defaults[name], opt.Default, "%s: the default in defaults/main.yml and in argument_specs.yml differ", name)
			}
			for name, opt := range options {
				assert.Regexp(t, "^"+role+"_", name, "role variables carry the role's prefix")
				if !opt.Required {
					_, ok := defaults[name]
					assert.True(t, ok, "%s is optional but defaults/main.yml has no default for it", name)
				}
			}
		})
	}
}
