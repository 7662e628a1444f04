// Package docs renders a module's documentation and argument spec, the
// Python file Ansible finds as the module, from its Go spec.
// It lives apart from package ansible so that module binaries, which run on
// every node, do not link a YAML library for docs they never print.
package docs

import (
	"fmt"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

type docOption struct {
	Description []string             `yaml:"description"`
	Type        string               `yaml:"type"`
	Elements    string               `yaml:"elements,omitempty"`
	Required    bool                 `yaml:"required,omitempty"`
	Default     any                  `yaml:"default,omitempty"`
	Choices     []any                `yaml:"choices,omitempty"`
	Aliases     []string             `yaml:"aliases,omitempty"`
	Suboptions  map[string]docOption `yaml:"suboptions,omitempty"`
}

type docAttribute struct {
	Support     string `yaml:"support"`
	Description string `yaml:"description"`
	Platforms   string `yaml:"platforms,omitempty"`
}

type documentation struct {
	Module           string                  `yaml:"module"`
	ShortDescription string                  `yaml:"short_description"`
	VersionAdded     string                  `yaml:"version_added"`
	Description      []string                `yaml:"description"`
	Author           []string                `yaml:"author"`
	Options          map[string]docOption    `yaml:"options"`
	Attributes       map[string]docAttribute `yaml:"attributes"`
	Notes            []string                `yaml:"notes,omitempty"`
}

type docReturn struct {
	Description []string             `yaml:"description"`
	Returned    string               `yaml:"returned"`
	Type        string               `yaml:"type"`
	Sample      any                  `yaml:"sample,omitempty"`
	Contains    map[string]docReturn `yaml:"contains,omitempty"`
}

// platforms is where the module runs: the node modules on Linux, the
// others on the Ansible controller (Linux or macOS).
func platforms(m *ansible.Module) string {
	if m.Platforms != "" {
		return m.Platforms
	}
	return "posix"
}

// documentationOf is the module's DOCUMENTATION, as ansible-doc reads it.
func documentationOf(m *ansible.Module) (documentation, error) {
	doc := documentation{
		Module:           m.Name,
		ShortDescription: m.ShortDescription,
		VersionAdded:     "0.1.0", // the collection's first release (galaxy.yml)
		Description:      m.Description,
		Author:           m.Author,
		Options:          docOptions(m.Spec.Options),
		Attributes: map[string]docAttribute{
			"check_mode": {Support: orNone(m.CheckMode), Description: "Can run in check_mode and return changed status prediction without modifying target."},
			"diff_mode":  {Support: orNone(m.DiffMode), Description: "Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode."},
			"platform":   {Support: "full", Description: "A Go binary module: the target needs no Python.", Platforms: platforms(m)},
		},
		Notes: m.Notes,
	}
	for name, o := range doc.Options {
		if len(o.Description) == 0 {
			return documentation{}, fmt.Errorf("module %s: option %s has no description", m.Name, name)
		}
	}
	return doc, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func docOptions(options []ansible.Option) map[string]docOption {
	if len(options) == 0 {
		return nil
	}
	out := make(map[string]docOption, len(options))
	for _, o := range options {
		description := o.Description
		if o.Format != "" {
			description = append(append([]string{}, description...), "Must be "+o.Format.Describe()+"; checked before anything is done.")
		}
		out[o.Name] = docOption{
			Description: description,
			Type:        string(o.TypeName()),
			Elements:    string(o.Elements),
			Required:    o.Required,
			Default:     o.Default,
			Choices:     o.Choices,
			Aliases:     o.Aliases,
			Suboptions:  docOptions(o.Options),
		}
	}
	return out
}

func docReturns(returns []ansible.Return) map[string]docReturn {
	if len(returns) == 0 {
		return nil
	}
	out := make(map[string]docReturn, len(returns))
	for _, r := range returns {
		out[r.Name] = docReturn{
			Description: r.Description,
			Returned:    r.Returned,
			Type:        r.Type,
			Sample:      r.Sample,
			Contains:    docReturns(r.Contains),
		}
	}
	return out
}
