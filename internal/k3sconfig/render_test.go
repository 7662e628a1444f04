package k3sconfig

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// decodeConfig reads a config dict as Ansible passes it (JSON numbers kept).
func decodeConfig(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	return m
}

func ptr[T any](v T) *T { return &v }

func TestRenderGolden(t *testing.T) {
	cases := []struct {
		name string
		in   desired
		cfg  string
	}{
		{"server-first", desired{Role: "server", Token: "K10secret::server:abc", ClusterInit: ptr(true)},
			`{"write-kubeconfig-mode": "0644", "tls-san": ["k8s.example.internal", "10.0.0.10"], "disable": "traefik,servicelb",
			  "node-label": ["topology.kubernetes.io/zone=rack-a"], "node-taint": "CriticalAddonsOnly=true:NoExecute",
			  "etcd-snapshot-retention": 10, "etcd-snapshot-schedule-cron": "0 */6 * * *", "secrets-encryption": "yes",
			  "kube-apiserver-arg": ["default-not-ready-toleration-seconds=30"], "cluster-cidr": "10.42.0.0/16", "node-name": "no"}`},
		{"agent-join", desired{Role: "agent", Token: "K10secret::server:abc", Server: "https://10.0.0.10:6443"},
			`{"node-label": ["disk=ssd", "gpu="], "node-ip": "10.0.0.21", "kubelet-arg": ["max-pods=250"], "node-external-ip": null}`},
		{"agent-dropin-append", desired{Role: "agent"}, `{"node-label+": ["extra=1"], "node-taint+": ["dedicated=storage:NoSchedule"]}`},
		{"empty", desired{Role: "server"}, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Config = decodeConfig(t, tc.cfg)
			got, err := render(tc.in)
			require.NoError(t, err)
			golden.File(t, filepath.Join("testdata", tc.name+".yaml"), got)

			// What k3s reads back is exactly what was asked for.
			var parsed map[string]any
			require.NoError(t, yaml.Unmarshal(got, &parsed))
			again, err := render(fromYAML(tc.in.Role, parsed))
			require.NoError(t, err)
			assert.Equal(t, string(got), string(again), "render is a fixed point")
		})
	}
}

// fromYAML turns a parsed file back into module input, owned keys going
// to their options, to check that rendering is canonical.
func fromYAML(role string, m map[string]any) desired {
	d := desired{Role: role, Config: map[string]any{}}
	for k, v := range m {
		switch k {
		case "token":
			d.Token = v.(string)
		case "server":
			d.Server = v.(string)
		case "cluster-init":
			d.ClusterInit = ptr(v.(bool))
		default:
			if n, isInt := v.(int); isInt {
				v = json.Number(strconv.Itoa(n))
			}
			d.Config[k] = v
		}
	}
	return d
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name string
		in   desired
		cfg  string
		want string
	}{
		{"misspelt key", desired{Role: "server"}, `{"node-lable": ["a=b"]}`, "config.node-lable is not a k3s server flag; did you mean node-label?"},
		{"server key on agent", desired{Role: "agent"}, `{"tls-san": ["x"]}`, "config.tls-san is a k3s server flag: k3s agent refuses to start with it (role is agent)"},
		{"agent key on server", desired{Role: "server"}, `{"disable-apiserver-lb": true}`, "config.disable-apiserver-lb is a k3s agent flag"},
		{"owned token", desired{Role: "server"}, `{"token": "x"}`, "config.token is set by the module option token: use token instead of config.token"},
		{"owned alias", desired{Role: "agent"}, `{"s": "https://x:6443"}`, "config.s is set by the module option server"},
		{"owned cluster-init", desired{Role: "server"}, `{"cluster-init": true}`, "module option cluster_init"},
		{"alias", desired{Role: "server"}, `{"i": "10.0.0.1"}`, "config.i is the short alias of node-ip: write node-ip"},
		{"removed flag", desired{Role: "server"}, `{"no-deploy": ["traefik"]}`, "config.no-deploy was removed from k3s: use disable"},
		{"config key", desired{Role: "server"}, `{"config": "/x"}`, "names the config file itself"},
		{"octal trap", desired{Role: "server"}, `{"write-kubeconfig-mode": 420}`, `config.write-kubeconfig-mode must be an octal string such as "0644", got the integer 420: YAML reads an unquoted 0644 as the octal number 420`},
		{"bad mode", desired{Role: "server"}, `{"write-kubeconfig-mode": "rw-r--r--"}`, "must be an octal file mode"},
		{"bool trap", desired{Role: "server"}, `{"node-name": false}`, "config.node-name must be a string, got the boolean false: YAML reads unquoted yes/no/on/off/true/false as booleans"},
		{"bad bool", desired{Role: "server"}, `{"debug": "sometimes"}`, `config.debug must be a boolean (true or false), got the string "sometimes"`},
		{"bad int", desired{Role: "server"}, `{"https-listen-port": "https"}`, "config.https-listen-port must be an integer"},
		{"bad duration", desired{Role: "server"}, `{"etcd-s3-timeout": 300}`, `config.etcd-s3-timeout must be a duration with a unit, such as "30s" or "5m", got the number 300`},
		{"scalar misread", desired{Role: "agent"}, `{"node-label": "a=b,c=d"}`, `config.node-label is a list and k3s does not split it on commas: "a=b,c=d" would reach k3s as one item`},
		{"dict for list", desired{Role: "agent"}, `{"node-label": {"a": "b"}}`, "config.node-label must be a list of strings, got a dict"},
		{"bad label", desired{Role: "agent"}, `{"node-label": ["justakey"]}`, `item "justakey" must be key=value`},
		{"bad taint", desired{Role: "agent"}, `{"node-taint": ["a=b:Sometimes"]}`, "Effect one of NoSchedule, PreferNoSchedule, NoExecute"},
		{"append to scalar", desired{Role: "server"}, `{"debug+": true}`, "config.debug+ appends to a list, but debug is a bool flag"},
		{"line break", desired{Role: "server"}, `{"node-name": "a\nb"}`, "must be a single line"},
		{"all problems at once", desired{Role: "server"}, `{"zz-unknown": 1, "debug": "x"}`, `config.debug must be a boolean (true or false), got the string "x"; config.zz-unknown is not a k3s server flag`},
		{"cluster_init on agent", desired{Role: "agent", ClusterInit: ptr(true)}, `{}`, "cluster_init applies to servers only (role is agent)"},
		{"bad server url", desired{Role: "agent", Server: "10.0.0.1:6443"}, `{}`, "server must be the https URL of an existing server"},
		{"token with space", desired{Role: "agent", Token: "a b"}, `{}`, "token must not contain whitespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Config = decodeConfig(t, tc.cfg)
			_, err := render(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestYAMLScalarsRoundTrip(t *testing.T) {
	for _, s := range []string{"plain", "10.0.0.1", "0644", "no", "Yes", "on", "null", "~", "", "a: b", "#x", "- a", "*.example.com",
		"key=value:NoSchedule", "/var/lib/rancher", "1e3", ".inf", "2001-12-14", `quote"d`, "tab\there", "ünïcode", "0x1F", "@at", "trailing:"} {
		out := encodeYAML(map[string]any{"k": s, "l": []string{s}})
		var back map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(out), &back), out)
		assert.Equal(t, s, back["k"], out)
		assert.Equal(t, []any{s}, back["l"], out)
		assert.Equal(t, s, parseScalar(yamlString(s)))
	}
	assert.Equal(t, "abc", parseScalar(`'abc' # comment`))
	assert.Equal(t, "it's", parseScalar(`'it''s'`))
	assert.Equal(t, "abc", parseScalar(`abc # comment`))
}
