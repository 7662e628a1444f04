// Package repocheck predicts what Flux will make of a repository before it
// is pushed: the files source-controller leaves out of the artifact
// (internal/fluxsource), then every Flux Kustomization of the FluxInstance's
// sync built as kustomize-controller builds it (fluxcd/pkg/kustomize's
// generator and SecureBuild, over the files the artifact keeps), and the
// Secrets and SSH host the bootstrap must provide; and, apart, the
// credentials a push would publish (credentials.go).
package repocheck

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/fluxsource"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// Options says what to check.
type Options struct {
	// Root is the repository's top directory, as source-controller checks it out.
	Root string
	// Instance is the FluxInstance (flux/cluster.yaml).
	Instance []byte
	// InstanceFile names it in messages.
	InstanceFile string
	// Secrets will exist when Flux starts ("namespace/name"): seeded by the
	// bootstrap or already in the cluster.
	Secrets []string
	// ConfigMaps will exist when Flux starts ("namespace/name"), for
	// postBuild.substituteFrom.
	ConfigMaps []string
	// KnownHosts are the hosts the deploy key's known_hosts covers (as
	// written there: "github.com", "[git.lan]:2222"); nil: not checked.
	KnownHosts []string
	// HostNetwork: the play applies the FluxInstance with flux_instance's
	// host_network (internal/hostnetwork's patches added).
	HostNetwork bool
	// CacheDir keeps the last clean report per repository; empty: none.
	CacheDir string
}

// Problem is one thing Flux would fail on, or a credential a push would publish.
type Problem struct {
	Kind          string `json:"kind"` // excluded, build, secret, known_hosts, substitute, instance, credential
	Kustomization string `json:"kustomization,omitempty"`
	Path          string `json:"path,omitempty"`
	Rule          string `json:"rule,omitempty"`
	Fix           string `json:"fix,omitempty"`
	Message       string `json:"message"`
}

// Checked is a Flux Kustomization that was built.
type Checked struct {
	Name      string `json:"name"` // namespace/name
	Path      string `json:"path"`
	Resources int    `json:"resources"`
}

// Report is what the check found.
type Report struct {
	Kustomizations []Checked `json:"kustomizations"`
	Excluded       []string  `json:"excluded"` // files the artifact leaves out
	Problems       []Problem `json:"problems"`
	Warnings       []Problem `json:"warnings"` // what works, with a consequence to know
	Skipped        []string  `json:"skipped"`  // Kustomizations of other sources, not checked
	Cached         bool      `json:"cached"`   // the report of an unchanged repository, kept by the last run
	UserRules      int       `json:"-"`
	files          []fluxsource.File
}

// sync is the part of a FluxInstance the check needs.
type sync struct {
	namespace, name, kind, url, path, pullSecret string
}

func readInstance(raw []byte, file string) (sync, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return sync{}, fmt.Errorf("%s: not YAML: %w", file, err)
	}
	u := unstructured.Unstructured{Object: obj}
	if u.GetKind() != kube.FluxInstanceKind {
		return sync{}, fmt.Errorf("%s: kind is %q, expected %s", file, u.GetKind(), kube.FluxInstanceKind)
	}
	s := sync{namespace: u.GetNamespace()}
	if s.namespace == "" {
		s.namespace = "flux-system"
	}
	spec, ok, _ := unstructured.NestedMap(obj, "spec", "sync")
	if !ok {
		return sync{}, fmt.Errorf("%s: spec.sync is not set: Flux would sync nothing from the repository", file)
	}
	str := func(k string) string { v, _ := spec[k].(string); return v }
	s.kind, s.url, s.path, s.pullSecret, s.name = str("kind"), str("url"), str("path"), str("pullSecret"), str("name")
	if s.name == "" {
		s.name = s.namespace
	}
	return s, nil
}

// Check runs the whole check; err is for what stops it (an unreadable
// repository or FluxInstance), problems go into the report: the builds'
// (kept when clean, see cache.go), then the credentials a push would
// publish (read every time: a cheap scan, and a file the artifact leaves
// out, which the cache key does not read, may hold one).
func Check(o Options) (*Report, error) {
	r, err := checkBuilds(o)
	if err != nil {
		return nil, err
	}
	credentials, err := scanCredentials(o.Root)
	if err != nil {
		return nil, err
	}
	r.Problems = append(r.Problems, credentials...)
	return r, nil
}

func checkBuilds(o Options) (*Report, error) {
	s, err := readInstance(o.Instance, o.InstanceFile)
	if err != nil {
		return nil, err
	}
	applied, err := appliedInstance(o)
	if err != nil {
		return nil, err
	}
	filter, err := fluxsource.Load(o.Root, "")
	if err != nil {
		return nil, err
	}
	files, err := filter.Walk()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	var key string
	if o.CacheDir != "" {
		if key, err = cacheKey(o, files); err != nil {
			return nil, err
		}
		if r, ok := fromCache(o.CacheDir, abs, key); ok {
			return r, nil
		}
	}
	r := &Report{files: files, UserRules: filter.UserRules, Excluded: []string{}, Problems: []Problem{}, Kustomizations: []Checked{}, Skipped: []string{}}
	for _, f := range files {
		if f.Excluded {
			r.Excluded = append(r.Excluded, f.Path)
		}
	}
	secrets := map[string]bool{}
	for _, name := range o.Secrets {
		secrets[name] = true
	}
	if s.pullSecret != "" && !secrets[s.namespace+"/"+s.pullSecret] {
		r.Problems = append(r.Problems, Problem{Kind: "secret", Path: o.InstanceFile,
			Message: fmt.Sprintf("spec.sync.pullSecret %s/%s will not exist: the bootstrap seeds %s", s.namespace, s.pullSecret, listOrNone(o.Secrets))})
	}
	if host, ok := sshHost(s.url); ok && o.KnownHosts != nil && !slices.Contains(o.KnownHosts, host) {
		r.Problems = append(r.Problems, Problem{Kind: "known_hosts", Path: o.InstanceFile,
			Message: fmt.Sprintf("spec.sync.url's host %s is not in the deploy key's known_hosts (%s): source-controller would refuse the SSH connection", host, strings.Join(o.KnownHosts, ", "))})
	}
	if s.kind != "GitRepository" {
		r.Skipped = append(r.Skipped, fmt.Sprintf("%s/%s (a %s sync: only a GitRepository is built)", s.namespace, s.name, s.kind))
		return r, nil
	}

	work, err := os.MkdirTemp("", "flux-repo-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work) // MkdirTemp makes it 0700
	if err := fluxsource.Export(o.Root, files, work); err != nil {
		return nil, fmt.Errorf("copy the artifact's files: %w", err)
	}
	b := &builder{report: r, work: work, sync: s, secrets: secrets, seeded: o.Secrets, seen: map[string]bool{}, built: map[string]bool{},
		applied: applied, hostNetwork: o.HostNetwork}
	b.instanceFile, b.instanceInRepo = instancePath(abs, o.InstanceFile)
	// The operator's Kustomization for the sync prunes.
	root := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": s.name, "namespace": s.namespace},
		"spec":     map[string]any{"path": s.path, "prune": true, "sourceRef": map[string]any{"kind": s.kind, "name": s.name}}}
	b.build(unstructured.Unstructured{Object: root})
	b.checkSubstitutions(o)
	if key != "" && len(r.Problems) == 0 {
		toCache(o.CacheDir, abs, key, r)
	}
	return r, nil
}

type builder struct {
	report  *Report
	work    string
	sync    sync
	secrets map[string]bool
	seeded  []string
	seen    map[string]bool
	// substitutions are the postBuild.substituteFrom references met, built
	// the ConfigMaps and Secrets the builds create ("Kind ns/name", ns
	// empty when the build leaves it to the target namespace).
	substitutions []substitution
	built         map[string]bool
	// instanceFile is the FluxInstance's file, relative to the root when inside it.
	instanceFile   string
	instanceInRepo bool
	// applied is the FluxInstance the play applies; hostNetwork, with flux_instance's host_network.
	applied     *unstructured.Unstructured
	hostNetwork bool
}

// instancePath is the instance file relative to root (slashes), and true;
// or as given, and false, when it is outside.
func instancePath(root, file string) (string, bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return file, false
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return file, false
	}
	return filepath.ToSlash(rel), true
}

type substitution struct {
	kustomization, kind, namespace, name string
}

// build builds one Flux Kustomization as kustomize-controller would, then
// the Kustomizations of the same source that its output holds.
func (b *builder) build(ks unstructured.Unstructured) {
	ns := ks.GetNamespace()
	if ns == "" {
		ns = b.sync.namespace
	}
	id := ns + "/" + ks.GetName()
	if b.seen[id] {
		return
	}
	b.seen[id] = true
	if ref, ok, _ := unstructured.NestedString(ks.Object, "spec", "decryption", "secretRef", "name"); ok && ref != "" && !b.secrets[ns+"/"+ref] {
		b.report.Problems = append(b.report.Problems, Problem{Kind: "secret", Kustomization: id,
			Message: fmt.Sprintf("spec.decryption.secretRef %s/%s will not exist: the bootstrap seeds %s", ns, ref, listOrNone(b.seeded))})
	}
	b.substitutionsOf(id, ns, ks)
	specPath, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
	rel := path.Clean(strings.TrimPrefix(filepath.ToSlash(specPath), "/"))
	dir := filepath.Join(b.work, filepath.FromSlash(rel))
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		b.report.Problems = append(b.report.Problems, b.missingPath(id, rel))
		return
	}
	gen := kustomize.NewGenerator(b.work, ks)
	action, err := gen.WriteFile(dir, kustomize.WithSaveOriginalKustomization())
	if err != nil {
		b.report.Problems = append(b.report.Problems, b.buildProblem(id, rel, err)...)
		return
	}
	resources, err := kustomize.SecureBuild(b.work, dir, false)
	if cleanErr := kustomize.CleanDirectory(dir, action); cleanErr != nil && err == nil {
		err = cleanErr
	}
	if err != nil {
		b.report.Problems = append(b.report.Problems, b.buildProblem(id, rel, err)...)
		return
	}
	b.report.Kustomizations = append(b.report.Kustomizations, Checked{Name: id, Path: rel, Resources: resources.Size()})
	for _, res := range resources.Resources() {
		if res.GetKind() == kube.FluxInstanceKind && strings.HasPrefix(res.GetApiVersion(), kube.FluxInstanceGVR.Group+"/") {
			obj, err := res.Map()
			if err != nil {
				b.report.Problems = append(b.report.Problems, Problem{Kind: "build", Kustomization: id, Path: rel, Message: fmt.Sprintf("read FluxInstance %s: %v", res.GetName(), err)})
				continue
			}
			b.instanceFromGit(id, rel, ks, unstructured.Unstructured{Object: obj})
		}
		if (res.GetKind() == "ConfigMap" || res.GetKind() == "Secret") && res.GetApiVersion() == "v1" {
			b.built[res.GetKind()+" "+res.GetNamespace()+"/"+res.GetName()] = true
		}
		if res.GetKind() != "Kustomization" || !strings.HasPrefix(res.GetApiVersion(), "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		obj, err := res.Map()
		if err != nil {
			b.report.Problems = append(b.report.Problems, Problem{Kind: "build", Kustomization: id, Path: rel, Message: fmt.Sprintf("read Kustomization %s: %v", res.GetName(), err)})
			continue
		}
		child := unstructured.Unstructured{Object: obj}
		childID := child.GetNamespace() + "/" + child.GetName()
		kind, _, _ := unstructured.NestedString(child.Object, "spec", "sourceRef", "kind")
		name, _, _ := unstructured.NestedString(child.Object, "spec", "sourceRef", "name")
		refNS, _, _ := unstructured.NestedString(child.Object, "spec", "sourceRef", "namespace")
		if refNS == "" {
			refNS = child.GetNamespace()
		}
		if kind != b.sync.kind || name != b.sync.name || (refNS != "" && refNS != b.sync.namespace) {
			b.report.Skipped = append(b.report.Skipped, fmt.Sprintf("%s (source %s %s/%s)", childID, kind, refNS, name))
			continue
		}
		if child.GetNamespace() == "" {
			child.SetNamespace(b.sync.namespace)
		}
		b.build(child)
	}
}

// substitutionsOf notes the Kustomization's required substituteFrom
// references (optional ones may be missing: kustomize-controller skips them).
func (b *builder) substitutionsOf(id, ns string, ks unstructured.Unstructured) {
	refs, _, _ := unstructured.NestedSlice(ks.Object, "spec", "postBuild", "substituteFrom")
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		if optional, _ := ref["optional"].(bool); optional || name == "" {
			continue
		}
		b.substitutions = append(b.substitutions, substitution{kustomization: id, kind: kind, namespace: ns, name: name})
	}
}

// checkSubstitutions reports each required substituteFrom reference that
// nothing provides: neither the bootstrap (seeded or already there) nor a
// build of the repository (applied by a Kustomization that runs first).
func (b *builder) checkSubstitutions(o Options) {
	provided := map[string]bool{}
	for _, n := range o.Secrets {
		provided["Secret "+n] = true
	}
	for _, n := range o.ConfigMaps {
		provided["ConfigMap "+n] = true
	}
	for _, s := range b.substitutions {
		full := s.namespace + "/" + s.name
		if provided[s.kind+" "+full] || b.built[s.kind+" "+full] || b.built[s.kind+" /"+s.name] {
			continue
		}
		seeded := o.ConfigMaps
		if s.kind == "Secret" {
			seeded = o.Secrets
		}
		b.report.Problems = append(b.report.Problems, Problem{Kind: "substitute", Kustomization: s.kustomization,
			Fix:     "seed it (role flux_bootstrap: flux_bootstrap_cluster_vars writes a ConfigMap once), have the repository create it, or mark the reference optional: true",
			Message: fmt.Sprintf("%s: spec.postBuild.substituteFrom %s %s will not exist: the bootstrap provides %s and no build of the repository creates it, so kustomize-controller would fail the Kustomization", s.kustomization, s.kind, full, listOrNone(seeded))})
	}
}

// missingPath explains a spec.path that is not in the artifact.
func (b *builder) missingPath(id, rel string) Problem {
	p := Problem{Kind: "build", Kustomization: id, Path: rel, Message: fmt.Sprintf("spec.path %q is not a directory of the artifact", rel)}
	for _, f := range b.report.files {
		if f.Excluded && strings.HasPrefix(f.Path, rel+"/") {
			p.Message += fmt.Sprintf(": its files are excluded (%s by %s)", f.Path, f.Rule)
			break
		}
	}
	return p
}

// buildProblem turns a build error into problems: one per excluded file
// the error names (with the rule and the fix), else the error itself.
func (b *builder) buildProblem(id, rel string, err error) []Problem {
	msg := strings.ReplaceAll(err.Error(), b.work+"/", "")
	msg = strings.ReplaceAll(msg, b.work, ".")
	var problems []Problem
	for _, f := range b.report.files {
		if !f.Excluded || !mentions(msg, f.Path) {
			continue
		}
		problems = append(problems, Problem{Kind: "excluded", Kustomization: id, Path: f.Path, Rule: f.Rule.String(), Fix: b.fix(f),
			Message: fmt.Sprintf("%s needs %s, which source-controller leaves out of the artifact (%s)", id, f.Path, f.Rule)})
	}
	if len(problems) == 0 {
		problems = append(problems, Problem{Kind: "build", Kustomization: id, Path: rel, Message: "kustomize build failed: " + msg})
	}
	return problems
}

// mentions is true when msg names file as a path (not as part of a longer name).
func mentions(msg, file string) bool {
	for i := strings.Index(msg, file); i >= 0; {
		end := i + len(file)
		before := i == 0 || strings.ContainsRune(" '\"/:", rune(msg[i-1]))
		after := end == len(msg) || strings.ContainsRune(" '\":,", rune(msg[end]))
		if before && after {
			return true
		}
		next := strings.Index(msg[i+1:], file)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// fix is the .sourceignore line that keeps f, and where it goes.
func (b *builder) fix(f fluxsource.File) string {
	switch {
	case f.Rule.File == "" && b.report.UserRules == 0:
		return fmt.Sprintf("add the line `!/%s` to .sourceignore at the repository root. Note: once .sourceignore has any line, source-controller drops all its default exclusions (images, archives, CI files), keeping only .git*", f.Path)
	case f.Rule.File == "":
		return fmt.Sprintf("add the line `!/%s` to .sourceignore at the repository root", f.Path)
	case f.Rule.File == "spec.ignore":
		return fmt.Sprintf("add the line `!/%s` at the end of spec.ignore", f.Path)
	default:
		dir := path.Dir(f.Rule.File)
		line := "/" + f.Path
		if dir != "." {
			line = "/" + strings.TrimPrefix(f.Path, dir+"/")
		}
		return fmt.Sprintf("add the line `!%s` to %s, after line %d", line, f.Rule.File, f.Rule.Line)
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	return strings.Join(sorted, ", ")
}

// sshHost is the host (as known_hosts writes it) of an SSH git URL.
func sshHost(raw string) (string, bool) {
	if strings.HasPrefix(raw, "ssh://") {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return "", false
		}
		if port := u.Port(); port != "" && port != "22" {
			return fmt.Sprintf("[%s]:%s", u.Hostname(), port), true
		}
		return u.Hostname(), true
	}
	// scp-like: user@host:path
	if at := strings.Index(raw, "@"); at >= 0 && !strings.Contains(raw, "://") {
		if colon := strings.Index(raw[at:], ":"); colon > 0 {
			return raw[at+1 : at+colon], true
		}
	}
	return "", false
}

// HostsOf lists the hosts of known_hosts lines (hashed entries cannot be
// read back: they are returned as is, and match nothing).
func HostsOf(knownHosts string) []string {
	hosts := []string{}
	for _, line := range strings.Split(knownHosts, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if strings.HasPrefix(fields[0], "@") && len(fields) > 1 { // @cert-authority, @revoked
			fields = fields[1:]
		}
		hosts = append(hosts, strings.Split(fields[0], ",")...)
	}
	return hosts
}
