package k3skubeconfig

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// markName names the extension that marks a cluster, user or context as
// written by this module: kubeconfig extensions are what client-go keeps
// on every read and write (kubectl config keeps them, as minikube's).
const markName = "gitops.k3s_flux"

// mark is the extension's value.
var mark = []byte(`{"managed-by":"gitops.k3s_flux"}`)

// renameHint tells how to give ours another name.
const renameHint = "give the cluster another name (option cluster_name; k8s_cluster_name in role k8s_cluster), or rename or delete those entries (kubectl config rename-context, delete-cluster, delete-user)"

func marked(ext map[string]runtime.Object) bool {
	_, ok := ext[markName]
	return ok
}

func withMark(ext map[string]runtime.Object) map[string]runtime.Object {
	out := map[string]runtime.Object{}
	for k, v := range ext {
		out[k] = v
	}
	out[markName] = &runtime.Unknown{Raw: mark, ContentType: runtime.ContentTypeJSON}
	return out
}

// ownsAny says whether cfg holds an entry named name that this module wrote.
func ownsAny(cfg *clientcmdapi.Config, name string) bool {
	c, u, x := cfg.Clusters[name], cfg.AuthInfos[name], cfg.Contexts[name]
	return (c != nil && marked(c.Extensions)) || (u != nil && marked(u.Extensions)) || (x != nil && marked(x.Extensions))
}

// merged is prev with ours's context named name, its cluster and its user
// added or replaced under that name, each marked; the current context
// becomes name only where prev has none. An entry of that name that this
// module did not write is refused, unless it is what an older version of
// the collection wrote there (see adoptable); taken over, it is named in
// the warnings.
func merged(prev, ours *clientcmdapi.Config, name string) (*clientcmdapi.Config, []string, error) {
	ctx, ok := ours.Contexts[name]
	if !ok {
		return nil, nil, fmt.Errorf("content has no context %q to merge (k3s names its own %q)", name, k3sName)
	}
	cluster, user := ours.Clusters[ctx.Cluster], ours.AuthInfos[ctx.AuthInfo]
	if cluster == nil || user == nil {
		return nil, nil, fmt.Errorf("content's context %q names a cluster or user it does not hold", name)
	}
	refused, adopted := foreign(prev, cluster, name)
	if len(refused) > 0 {
		return nil, nil, fmt.Errorf("it already has %s that this module did not write (it marks its own with the extension %s): %s; nothing was changed",
			strings.Join(refused, ", "), markName, renameHint)
	}
	var warnings []string
	if len(adopted) > 0 {
		warnings = append(warnings, fmt.Sprintf("took over %s, written without a mark (by an earlier version of gitops.k3s_flux) for the same API endpoint and CA; they are marked now", strings.Join(adopted, ", ")))
	}
	out := prev.DeepCopy()
	ctx, cluster, user = ctx.DeepCopy(), cluster.DeepCopy(), user.DeepCopy()
	ctx.Cluster, ctx.AuthInfo = name, name
	ctx.Extensions, cluster.Extensions, user.Extensions = withMark(ctx.Extensions), withMark(cluster.Extensions), withMark(user.Extensions)
	out.Contexts[name], out.Clusters[name], out.AuthInfos[name] = ctx, cluster, user
	if out.CurrentContext == "" {
		out.CurrentContext = name
	}
	return out, warnings, nil
}

// foreign names the unmarked entries called name in prev: those refused,
// and those adoptable.
func foreign(prev *clientcmdapi.Config, ours *clientcmdapi.Cluster, name string) (refused, adopted []string) {
	sort := func(ok bool, entry string) {
		if ok {
			adopted = append(adopted, entry)
		} else {
			refused = append(refused, entry)
		}
	}
	c := prev.Clusters[name]
	clusterOurs := c != nil && (marked(c.Extensions) || sameCluster(c, ours))
	if c != nil && !marked(c.Extensions) {
		sort(clusterOurs, fmt.Sprintf("cluster %q", name))
	}
	if u := prev.AuthInfos[name]; u != nil && !marked(u.Extensions) {
		sort(clusterOurs && certificateOnly(u), fmt.Sprintf("user %q", name))
	}
	if x := prev.Contexts[name]; x != nil && !marked(x.Extensions) {
		sort(clusterOurs && x.Cluster == name && x.AuthInfo == name, fmt.Sprintf("context %q", name))
	}
	return refused, adopted
}

// sameCluster says whether an unmarked cluster is ours as an older version
// wrote it: the same API endpoint and the same CA. Whoever wrote it, it
// names the same cluster.
func sameCluster(c, ours *clientcmdapi.Cluster) bool {
	return c.Server == ours.Server && c.CertificateAuthority == "" && len(c.CertificateAuthorityData) > 0 &&
		bytes.Equal(c.CertificateAuthorityData, ours.CertificateAuthorityData)
}

// certificateOnly says whether a user holds nothing but a client
// certificate and key, as k3s's admin kubeconfig does (k3s renews the
// certificate, so its bytes are not compared): a user's own token, exec
// plugin or password is never taken over.
func certificateOnly(u *clientcmdapi.AuthInfo) bool {
	rest := *u.DeepCopy()
	rest.ClientCertificateData, rest.ClientKeyData, rest.LocationOfOrigin, rest.Extensions = nil, nil, "", nil
	return len(u.ClientCertificateData) > 0 && len(u.ClientKeyData) > 0 && reflect.DeepEqual(rest, clientcmdapi.AuthInfo{})
}

// withoutOurs is cfg without the cluster, user and context named name that
// this module wrote; the current context is unset only if it was that
// context. The warnings name what stays: entries of that name it did not
// write, and the user's contexts that used the removed cluster or user.
func withoutOurs(cfg *clientcmdapi.Config, name string) (*clientcmdapi.Config, []string) {
	out := cfg.DeepCopy()
	var kept []string
	removed := map[string]bool{}
	take := func(kind string, present, ours bool, remove func()) {
		switch {
		case ours:
			remove()
			removed[kind] = true
		case present:
			kept = append(kept, fmt.Sprintf("%s %q", kind, name))
		}
	}
	c, u, x := out.Clusters[name], out.AuthInfos[name], out.Contexts[name]
	take("cluster", c != nil, c != nil && marked(c.Extensions), func() { delete(out.Clusters, name) })
	take("user", u != nil, u != nil && marked(u.Extensions), func() { delete(out.AuthInfos, name) })
	take("context", x != nil, x != nil && marked(x.Extensions), func() { delete(out.Contexts, name) })
	if removed["context"] && out.CurrentContext == name {
		out.CurrentContext = ""
	}
	var warnings []string
	if len(kept) > 0 {
		warnings = append(warnings, fmt.Sprintf("%s left as they are: this module did not write them (no extension %s on them; an earlier version of gitops.k3s_flux wrote none: a run of k8s.yml with this one marks its own)", strings.Join(kept, ", "), markName))
	}
	names := make([]string, 0, len(out.Contexts))
	for n := range out.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		x := out.Contexts[n]
		var gone []string
		if removed["cluster"] && x.Cluster == name {
			gone = append(gone, fmt.Sprintf("cluster %q", name))
		}
		if removed["user"] && x.AuthInfo == name {
			gone = append(gone, fmt.Sprintf("user %q", name))
		}
		if len(gone) > 0 {
			warnings = append(warnings, fmt.Sprintf("context %q uses %s, removed with the cluster: the context is left as it is, and names what is gone now (kubectl config delete-context %s)", n, strings.Join(gone, " and "), n))
		}
	}
	return out, warnings
}

// ownView is the part of cfg a merge or removal of name touches, as YAML:
// the cluster, user and context of that name, and the current context when
// it is that one; "" when there is none. The diff shows nothing else of
// the user's file.
func ownView(cfg *clientcmdapi.Config, name string) (string, error) {
	sub := clientcmdapi.NewConfig()
	if c, ok := cfg.Clusters[name]; ok {
		sub.Clusters[name] = c
	}
	if u, ok := cfg.AuthInfos[name]; ok {
		sub.AuthInfos[name] = u
	}
	if x, ok := cfg.Contexts[name]; ok {
		sub.Contexts[name] = x
	}
	if cfg.CurrentContext == name {
		sub.CurrentContext = name
	}
	raw, err := clientcmd.Write(*sub)
	if err != nil {
		return "", err
	}
	var view map[string]any
	if err := yaml.Unmarshal(raw, &view); err != nil {
		return "", err
	}
	for k, v := range view {
		if v == nil || v == "" || k == "apiVersion" || k == "kind" || k == "preferences" {
			delete(view, k)
		}
	}
	if len(view) == 0 {
		return "", nil
	}
	out, err := yaml.Marshal(view)
	return string(out), err
}
