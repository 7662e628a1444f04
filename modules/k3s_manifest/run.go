package k3smanifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
)

type args struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	State   string `json:"state"`
	DataDir string `json:"data_dir"`
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// run plans the file from what is there, then (not in check mode) writes or
// removes it.
func run(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if !validName.MatchString(a.Name) {
		return nil, fmt.Errorf("name must be lowercase letters, digits and '-', at most 63 characters, got %q", a.Name)
	}
	path := filepath.Join(a.DataDir, "server", "manifests", a.Name+".yaml")
	var objects []string
	if a.State == "present" {
		var err error
		if objects, err = manifestObjects(a.Content); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	}
	before, exists, err := read(path)
	if err != nil {
		return nil, err
	}
	want := a.Content
	if want != "" && want[len(want)-1] != '\n' {
		want += "\n"
	}
	res := &ansible.Result{}
	res.Set("path", path)
	if a.State == "absent" {
		res.Changed = exists
		res.Diff = []ansible.Diff{{Before: before, BeforeHeader: path, AfterHeader: path}}
		if exists && !req.CheckMode {
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("remove %s: %w", path, err)
			}
		}
		return res, nil
	}
	res.Set("objects", objects)
	res.Changed = !exists || before != want
	res.Diff = []ansible.Diff{{Before: before, After: want, BeforeHeader: path, AfterHeader: path}}
	if res.Changed && !req.CheckMode {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("make %s: %w", filepath.Dir(path), err)
		}
		if err := atomicfile.Write(path, bytes.NewReader([]byte(want)), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return res, nil
}

func read(path string) (string, bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", path, err)
	}
	return string(raw), true, nil
}

// manifestObjects lists the objects in a manifest, refusing a document k3s's
// deploy controller could not apply.
func manifestObjects(content string) ([]string, error) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(content)))
	objects := []string{}
	for i := 1; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d is not YAML: %w", i, err)
		}
		if doc == nil {
			continue // an empty document, as between two "---"
		}
		meta, _ := doc["metadata"].(map[string]any)
		apiVersion, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		name, _ := meta["name"].(string)
		if apiVersion == "" || kind == "" || name == "" {
			return nil, fmt.Errorf("document %d has no apiVersion, kind or metadata.name", i)
		}
		id := kind + "/" + name
		if ns, _ := meta["namespace"].(string); ns != "" {
			id = kind + "/" + ns + "/" + name
		}
		objects = append(objects, id)
	}
	if len(objects) == 0 {
		return nil, errors.New("no object in it")
	}
	return objects, nil
}
