package k3skubeconfig

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfigKeys are the top-level keys of a kubeconfig (client-go's
// clientcmd api v1 Config): a merge writes the file whole again from what
// client-go read, so any other key would be lost.
var kubeconfigKeys = []string{"apiVersion", "kind", "preferences", "clusters", "users", "contexts", "current-context", "extensions"}

// contentKeys are the keys only a kubeconfig holds, besides its kind.
var contentKeys = []string{"clusters", "contexts", "users", "current-context", "preferences"}

// kubeconfigShape says why data is not a kubeconfig a merge may rewrite,
// nil when it is one. kubectl itself takes any mapping for one, ignoring
// what it does not know; a merge is stricter, since it writes the file whole
// again: one YAML or JSON mapping (or nothing yet) whose keys are all a
// kubeconfig's, with kind Config and apiVersion v1 or, without kind, one of
// contentKeys; an empty mapping holds nothing to lose.
func kubeconfigShape(data []byte) error {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("it does not parse as YAML or JSON (%w)", err)
		}
		docs = append(docs, &doc)
	}
	switch {
	case len(docs) == 0 || len(docs[0].Content) == 0:
		return nil
	case len(docs) > 1:
		return fmt.Errorf("it holds %d YAML documents, a kubeconfig one", len(docs))
	}
	root := docs[0].Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return errors.New("its top level is not a mapping, as a kubeconfig's is")
	}
	if err := checkTopLevel(root); err != nil {
		return err
	}
	if _, err := clientcmd.Load(data); err != nil {
		return fmt.Errorf("client-go cannot read it (%w)", err)
	}
	return nil
}

// checkTopLevel checks a mapping's keys, its kind and its apiVersion.
func checkTopLevel(root *yaml.Node) error {
	values := map[string]string{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key := root.Content[i].Value
		if !slices.Contains(kubeconfigKeys, key) {
			return fmt.Errorf("it has top-level key %q, which no kubeconfig has (one holds only %s)", key, strings.Join(kubeconfigKeys, ", "))
		}
		values[key] = root.Content[i+1].Value
	}
	if kind, ok := values["kind"]; ok && kind != "Config" {
		return fmt.Errorf("its kind %q is not Config", kind)
	}
	if v, ok := values["apiVersion"]; ok && v != "v1" {
		return fmt.Errorf("its apiVersion %q is not v1", v)
	}
	if len(values) > 0 && values["kind"] != "Config" && !slices.ContainsFunc(contentKeys, func(k string) bool { _, ok := values[k]; return ok }) {
		return fmt.Errorf("it has neither kind: Config nor any of %s", strings.Join(contentKeys, ", "))
	}
	return nil
}
