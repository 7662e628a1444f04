package seedsecret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/knownhosts"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

type secretSpec struct {
	Name         string            `json:"name"`
	Namespace    string            `json:"namespace"`
	Type         string            `json:"type"`
	Data         map[string]string `json:"data"`
	StringData   map[string]string `json:"string_data"`
	GitDeployKey *struct {
		PrivateKey     string `json:"private_key"`
		PrivateKeyFile string `json:"private_key_file"`
		KnownHosts     string `json:"known_hosts"`
		GitHubMetaFile string `json:"github_meta_file"`
	} `json:"git_deploy_key"`
	AgeKey *struct {
		Key     string `json:"key"`
		KeyFile string `json:"key_file"`
	} `json:"age_key"`
	GitHTTPS *struct {
		Username    string `json:"username"`
		Password    string `json:"password"`
		BearerToken string `json:"bearer_token"`
		CAFile      string `json:"ca_file"`
	} `json:"git_https"`
	UniversalAuth *struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	} `json:"universal_auth"`
}

type args struct {
	kube.Connection
	Namespaces []string        `json:"namespaces"`
	Secrets    []secretSpec    `json:"secrets"`
	ConfigMaps []configMapSpec `json:"config_maps"`
	State      string          `json:"state"`
	Force      bool            `json:"force"`
}

// secretResult is what the module returns for a Secret: never a value.
type secretResult struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Type      string   `json:"type"`
	Keys      []string `json:"keys"`
	Changed   bool     `json:"changed"`
	Adopted   bool     `json:"adopted"`
	AdoptedBy string   `json:"adopted_by,omitempty"`
}

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

func run(ctx context.Context, req *ansible.Request, connect kube.Connector) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	// Build every Secret's data first: bad input fails before anything
	// is sent to the cluster.
	desired := make([]map[string][]byte, len(a.Secrets))
	if a.State == "present" {
		for i, s := range a.Secrets {
			data, warnings, err := secretData(req, s)
			if err != nil {
				return nil, fmt.Errorf("secrets[%d] (%s/%s): %w", i, s.Namespace, s.Name, err)
			}
			for _, w := range warnings {
				req.Warn("%s", w)
			}
			desired[i] = data
		}
	}
	cmData := make([]map[string]string, len(a.ConfigMaps))
	for i, s := range a.ConfigMaps {
		var err error
		if cmData[i], err = configMapData(i, s); err != nil {
			return nil, err
		}
	}
	if a.Connection.PlanWithoutCluster(req) {
		return planNewCluster(a, desired, cmData).result(), nil
	}
	clients, err := connect(a.Connection)
	if err != nil {
		return nil, err
	}
	p, err := planSeed(ctx, clients, a, desired, cmData)
	if err != nil {
		return nil, err
	}
	if w := differsWarning(p.configMaps); w != "" {
		req.Warn("%s", w)
	}
	for _, sp := range p.secrets {
		if sp.result.Adopted {
			req.Warn("Secret %s/%s is adopted by Flux (%s): left alone; set force=true to change it anyway", sp.spec.Namespace, sp.spec.Name, sp.result.AdoptedBy)
		}
	}
	// Check mode is the plan alone.
	if !req.CheckMode {
		if err := p.apply(ctx, clients); err != nil {
			return p.result(), err
		}
	}
	return p.result(), nil
}

// seedPlan is what a run changes, found by reads and dry runs only: a
// refusal for one Secret fails the task before anything is written.
type seedPlan struct {
	namespaces []namespacePlan
	configMaps []configMapPlan
	secrets    []secretPlan
}

type namespacePlan struct {
	name   string
	create bool
}

// secretPlan is one Secret's part: at most one of apply (with replace,
// the Secret of another type deleted first) and delete.
type secretPlan struct {
	spec    secretSpec
	result  secretResult
	diff    *ansible.Diff
	apply   *unstructured.Unstructured
	replace *unstructured.Unstructured
	delete  bool
}

// planSeed reads the namespaces and Secrets and decides each change.
func planSeed(ctx context.Context, c *kube.Clients, a args, desired []map[string][]byte, cmData []map[string]string) (*seedPlan, error) {
	p := &seedPlan{}
	for _, ns := range a.Namespaces {
		np, err := planNamespace(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		p.namespaces = append(p.namespaces, np)
	}
	for i, s := range a.ConfigMaps {
		var cp configMapPlan
		var err error
		if a.State == "present" {
			cp, err = planConfigMap(ctx, c, s, cmData[i])
		} else {
			cp, err = planConfigMapDelete(ctx, c, s, a.Force)
		}
		if err != nil {
			return nil, err
		}
		p.configMaps = append(p.configMaps, cp)
	}
	for i, s := range a.Secrets {
		var sp secretPlan
		var err error
		if a.State == "present" {
			sp, err = planSecret(ctx, c, s, desired[i], a.Force)
		} else {
			sp, err = planDelete(ctx, c, s, a.Force)
		}
		if err != nil {
			return nil, err
		}
		p.secrets = append(p.secrets, sp)
	}
	return p, nil
}

// planNewCluster is the plan for a cluster that does not exist yet: every
// namespace and every present Secret created, nothing deleted.
func planNewCluster(a args, desired []map[string][]byte, cmData []map[string]string) *seedPlan {
	p := &seedPlan{}
	for _, ns := range a.Namespaces {
		p.namespaces = append(p.namespaces, namespacePlan{name: ns, create: true})
	}
	for i, s := range a.ConfigMaps {
		cp := configMapPlan{result: configMapResult{Name: s.Name, Namespace: s.Namespace, Keys: []string{}, Differs: []string{}}}
		if a.State == "present" {
			cp.create = configMapObject(s, cmData[i])
			cp.result.Keys, cp.result.Created = sortedKeys(cmData[i]), true
			cp.diff = configMapDiff(s, "", cp.create)
		}
		p.configMaps = append(p.configMaps, cp)
	}
	for i, s := range a.Secrets {
		sp := secretPlan{spec: s, result: secretResult{Name: s.Name, Namespace: s.Namespace, Type: s.Type, Keys: []string{}}}
		if a.State == "present" {
			sp.result.Keys, sp.result.Changed = sortedKeys(desired[i]), true
			sp.diff = secretDiff(s, nil, desired[i])
		}
		p.secrets = append(p.secrets, sp)
	}
	return p
}

// apply carries the plan out: namespaces first, then each Secret.
func (p *seedPlan) apply(ctx context.Context, c *kube.Clients) error {
	for _, np := range p.namespaces {
		if np.create {
			if err := createNamespace(ctx, c, np.name, false); err != nil {
				return err
			}
		}
	}
	for _, cp := range p.configMaps {
		if err := cp.carryOut(ctx, c); err != nil {
			return err
		}
	}
	for _, sp := range p.secrets {
		if err := sp.carryOut(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (p *seedPlan) result() *ansible.Result {
	res := &ansible.Result{}
	nsResults := []map[string]any{}
	for _, np := range p.namespaces {
		nsResults = append(nsResults, map[string]any{"name": np.name, "created": np.create})
		if np.create {
			res.Changed = true
			res.Diff = append(res.Diff, namespaceDiff(np.name))
		}
	}
	cmResults := []configMapResult{}
	for _, cp := range p.configMaps {
		cmResults = append(cmResults, cp.result)
		res.Changed = res.Changed || cp.changed()
		if cp.diff != nil {
			res.Diff = append(res.Diff, *cp.diff)
		}
	}
	secretResults := []secretResult{}
	for _, sp := range p.secrets {
		secretResults = append(secretResults, sp.result)
		res.Changed = res.Changed || sp.result.Changed
		if sp.diff != nil {
			res.Diff = append(res.Diff, *sp.diff)
		}
	}
	res.Set("namespaces", nsResults)
	res.Set("config_maps", cmResults)
	res.Set("secrets", secretResults)
	return res
}

func namespaceDiff(ns string) ansible.Diff {
	return ansible.Diff{Before: "", After: "namespace: " + ns + "\n", BeforeHeader: "namespace/" + ns, AfterHeader: "namespace/" + ns}
}

// secretData builds the Secret's data from its one source.
func secretData(req *ansible.Request, s secretSpec) (map[string][]byte, []string, error) {
	switch {
	case s.GitDeployKey != nil:
		k := s.GitDeployKey
		key := k.PrivateKey
		if k.PrivateKeyFile != "" {
			var err error
			if key, err = readSecretFile("git_deploy_key.private_key_file", k.PrivateKeyFile); err != nil {
				return nil, nil, err
			}
			req.AddSecret(strings.TrimSpace(key))
		}
		var knownHosts string
		var warnings []string
		var err error
		_, forge := knownhosts.Hosts(k.KnownHosts)
		switch {
		case k.GitHubMetaFile != "" && k.KnownHosts != "github":
			return nil, nil, fmt.Errorf("git_deploy_key.github_meta_file confirms GitHub's keys: it goes with known_hosts=github only")
		case k.KnownHosts == "github":
			knownHosts, warnings, err = knownhosts.GitHub(k.GitHubMetaFile)
		case forge:
			knownHosts, err = knownhosts.Pinned(k.KnownHosts)
		default:
			knownHosts, err = knownhosts.Check(k.KnownHosts)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("git_deploy_key.known_hosts: %w", err)
		}
		data, err := deployKeyData(key, knownHosts)
		return data, warnings, err
	case s.AgeKey != nil:
		text := s.AgeKey.Key
		if s.AgeKey.KeyFile != "" {
			var err error
			if text, err = readSecretFile("age_key.key_file", s.AgeKey.KeyFile); err != nil {
				return nil, nil, err
			}
			req.AddSecret(strings.TrimSpace(text))
		}
		for _, line := range strings.Split(text, "\n") {
			req.AddSecret(strings.TrimSpace(line))
		}
		data, err := ageKeyData(text)
		return data, nil, err
	case s.GitHTTPS != nil:
		data := map[string][]byte{"username": []byte(s.GitHTTPS.Username), "password": []byte(s.GitHTTPS.Password)}
		if s.GitHTTPS.BearerToken != "" {
			data = map[string][]byte{"bearerToken": []byte(s.GitHTTPS.BearerToken)}
		}
		if s.GitHTTPS.CAFile != "" {
			ca, err := readCAFile(s.GitHTTPS.CAFile)
			if err != nil {
				return nil, nil, fmt.Errorf("git_https.ca_file: %w", err)
			}
			data["ca.crt"] = ca
		}
		return data, nil, nil
	case s.UniversalAuth != nil:
		return map[string][]byte{"clientId": []byte(s.UniversalAuth.ClientID), "clientSecret": []byte(s.UniversalAuth.ClientSecret)}, nil, nil
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, nil, fmt.Errorf("data.%s is not base64 (use string_data for plain values)", k)
		}
		data[k] = raw
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return data, nil, nil
}

// planNamespace: a missing namespace is created by name only (the
// API server is asked, by a dry run, whether it would).
func planNamespace(ctx context.Context, c *kube.Clients, name string) (namespacePlan, error) {
	_, err := c.Typed.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return namespacePlan{name: name}, nil
	}
	if !apierrors.IsNotFound(err) {
		return namespacePlan{}, fmt.Errorf("get namespace %s: %w", name, err)
	}
	return namespacePlan{name: name, create: true}, createNamespace(ctx, c, name, true)
}

func createNamespace(ctx context.Context, c *kube.Clients, name string, dryRun bool) error {
	opts := metav1.CreateOptions{FieldManager: kube.FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, opts); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// planSecret decides whether the Secret must be applied: not when it
// already holds exactly this data (compared by content, counting only the
// keys this module owns), nor when Flux adopted it.
func planSecret(ctx context.Context, c *kube.Clients, s secretSpec, data map[string][]byte, force bool) (secretPlan, error) {
	sp := secretPlan{spec: s, result: secretResult{Name: s.Name, Namespace: s.Namespace, Type: s.Type, Keys: sortedKeys(data)}}
	current, err := c.Get(ctx, secretGVR, s.Namespace, s.Name)
	if err != nil {
		return sp, err
	}
	var before map[string][]byte
	owned := map[string]bool{} // data keys this module applied before
	if current != nil {
		if by, adopted := kube.FluxOwned(current); adopted && !force {
			sp.result.Adopted, sp.result.AdoptedBy = true, by
			return sp, nil
		}
		owned = ownedKeys(current)
		before = currentData(current)
		curType, _, _ := unstructured.NestedString(current.Object, "type")
		if curType != s.Type {
			if !force {
				return sp, fmt.Errorf("Secret %s/%s has type %s, not %s: a Secret's type cannot change; delete it or set force=true to replace it", s.Namespace, s.Name, curType, s.Type)
			}
			// The new Secret must be accepted before the old one goes:
			// a dry-run create under a generated name asks the API server.
			if err := dryRunCreate(ctx, c, s, data); err != nil {
				return sp, fmt.Errorf("replace Secret %s/%s (type %s) with type %s: the API server refuses the new one, so the old one was left as it is: %w", s.Namespace, s.Name, curType, s.Type, err)
			}
			sp.replace = current
			sp.apply = secretObject(s, data)
			sp.result.Changed, sp.diff = true, secretDiff(s, before, data)
			return sp, nil
		}
		if sameData(before, data, owned) {
			return sp, nil
		}
	}
	// What the Secret will hold: keys other managers own stay.
	after := map[string][]byte{}
	for k, v := range before {
		if !owned[k] {
			after[k] = v
		}
	}
	for k, v := range data {
		after[k] = v
	}
	sp.apply = secretObject(s, data)
	// A dry run validates it, unless its namespace does not exist yet (it
	// is created first, and the real apply validates it then).
	if _, err := c.Typed.CoreV1().Namespaces().Get(ctx, s.Namespace, metav1.GetOptions{}); err == nil {
		if _, err := c.Apply(ctx, secretGVR, sp.apply, true); err != nil {
			return sp, err
		}
	} else if !apierrors.IsNotFound(err) {
		return sp, fmt.Errorf("get namespace %s: %w", s.Namespace, err)
	}
	sp.result.Changed, sp.diff = true, secretDiff(s, before, after)
	return sp, nil
}

func secretObject(s secretSpec, data map[string][]byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace},
		"type":     s.Type,
		"data":     encodeData(data),
	}}
}

// carryOut writes what the plan decided for one Secret. A replaced Secret
// whose successor the API server then refuses is put back.
func (sp secretPlan) carryOut(ctx context.Context, c *kube.Clients) error {
	s := sp.spec
	switch {
	case sp.delete:
		if err := c.Typed.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	case sp.apply != nil:
		if sp.replace != nil {
			if err := c.Typed.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("replace Secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		}
		if _, err := c.Apply(ctx, secretGVR, sp.apply, false); err != nil {
			if sp.replace != nil {
				return errors.Join(err, restoreSecret(ctx, c, sp.replace))
			}
			return err
		}
	}
	return nil
}

// dryRunCreate asks the API server whether it would accept the Secret
// (type-specific keys included), without a name that could collide.
func dryRunCreate(ctx context.Context, c *kube.Clients, s secretSpec, data map[string][]byte) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: s.Name + "-", Namespace: s.Namespace}, Type: corev1.SecretType(s.Type), Data: data}
	_, err := c.Typed.CoreV1().Secrets(s.Namespace).Create(ctx, sec, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// restoreSecret puts back a Secret deleted for a replacement that then
// failed, so a failed run never leaves it missing.
func restoreSecret(ctx context.Context, c *kube.Clients, old *unstructured.Unstructured) error {
	obj := old.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	if _, err := c.Dynamic.Resource(secretGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
		return fmt.Errorf("the old Secret %s could not be put back either: %w", kube.ObjectName(obj), err)
	}
	return fmt.Errorf("the old Secret %s was put back as it was", kube.ObjectName(obj))
}

// planDelete: an existing Secret not adopted by Flux is deleted (the API
// server is asked, by a dry run, whether it would).
func planDelete(ctx context.Context, c *kube.Clients, s secretSpec, force bool) (secretPlan, error) {
	sp := secretPlan{spec: s, result: secretResult{Name: s.Name, Namespace: s.Namespace, Type: s.Type, Keys: []string{}}}
	current, err := c.Get(ctx, secretGVR, s.Namespace, s.Name)
	if err != nil || current == nil {
		return sp, err
	}
	if by, adopted := kube.FluxOwned(current); adopted && !force {
		sp.result.Adopted, sp.result.AdoptedBy = true, by
		return sp, nil
	}
	if err := c.Typed.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsNotFound(err) {
		return sp, fmt.Errorf("delete Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	sp.delete, sp.result.Changed, sp.diff = true, true, secretDiff(s, currentData(current), nil)
	return sp, nil
}

// currentData decodes a Secret's data.
func currentData(obj *unstructured.Unstructured) map[string][]byte {
	raw, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	out := make(map[string][]byte, len(raw))
	for k, v := range raw {
		b, _ := base64.StdEncoding.DecodeString(v)
		out[k] = b
	}
	return out
}

// ownedKeys lists the data keys this module's field manager applied.
func ownedKeys(obj *unstructured.Unstructured) map[string]bool {
	owned := map[string]bool{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != kube.FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			continue
		}
		for k := range fields["f:data"] {
			owned[strings.TrimPrefix(k, "f:")] = true
		}
	}
	return owned
}

// sameData: every wanted key holds the wanted bytes, and no key this
// module applied before is gone from the wanted set (keys other managers
// own are theirs).
func sameData(current, want map[string][]byte, owned map[string]bool) bool {
	for k, v := range want {
		if cur, ok := current[k]; !ok || !bytes.Equal(cur, v) {
			return false
		}
	}
	for k := range owned {
		if _, ok := want[k]; !ok {
			return false
		}
	}
	return true
}

func encodeData(data map[string][]byte) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = base64.StdEncoding.EncodeToString(v)
	}
	return out
}

func sortedKeys[V any](data map[string]V) []string {
	return slices.Sorted(maps.Keys(data))
}

// secretDiff shows a Secret's keys, never their values nor anything
// derived from them: on the after side a key whose value differs from the
// before side's says so.
func secretDiff(s secretSpec, before, after map[string][]byte) *ansible.Diff {
	render := func(data, other map[string][]byte) string {
		if data == nil {
			return ""
		}
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\ntype: %s\ndata:\n", s.Name, s.Namespace, s.Type)
		for _, k := range sortedKeys(data) {
			old, had := other[k]
			fmt.Fprintf(&b, "  %s: %s\n", k, ansible.RedactedAs(other != nil && had && !bytes.Equal(old, data[k])))
		}
		return b.String()
	}
	header := "secret/" + s.Namespace + "/" + s.Name
	return &ansible.Diff{Before: render(before, nil), After: render(after, before), BeforeHeader: header, AfterHeader: header}
}
