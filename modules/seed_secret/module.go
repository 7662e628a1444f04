package seedsecret

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

var module = &ansible.Module{
	Name:             "seed_secret",
	ShortDescription: "Create the namespaces, seed Secrets and seed ConfigMaps Flux needs before it runs",
	Description: []string{
		"Creates namespaces by name only (no labels or annotations), so that Flux can take them over later without a fight.",
		"Creates or updates Secrets by server-side apply with the field manager C(gitops.k3s_flux): a git deploy key with C(known_hosts) built from GitHub's, GitLab's or Codeberg's published host keys, a SOPS age key, or any data (for example Infisical universal auth in each tier namespace).",
		"Values are compared by content and never returned, logged or shown: diffs show each key as C(<redacted>), or C(<redacted, changed>) on the new side where its value changed, and nothing derived from a value.",
		"Creates ConfigMaps once (cluster variables for Flux's C(postBuild.substituteFrom), say): a missing one is created, an existing one is never changed, so that Flux or you own it from then on; its values are no secret and show in the diff.",
		"A Secret that Flux has adopted (it carries a C(kustomize.toolkit.fluxcd.io/name) or C(helm.toolkit.fluxcd.io/name) label) is left alone and reported as adopted, unless C(force=true).",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Notes: []string{
		"C(known_hosts=github) writes one line per GitHub host key (ecdsa, ed25519, rsa) for C(github.com) and again for C([ssh.github.com]:443) (GitHub's SSH over the HTTPS port), each checked against GitHub's published SHA256 fingerprint; the RSA key GitHub retired in March 2023 is refused. C(known_hosts=gitlab) writes gitlab.com's three keys for C(gitlab.com) (not C(altssh.gitlab.com), which GitLab's list does not name), C(known_hosts=codeberg) codeberg.org's three for C(codeberg.org), each checked against the SHA256 fingerprint the forge publishes (U(https://docs.gitlab.com/user/gitlab_com/#ssh-host-keys-fingerprints), U(https://docs.codeberg.org/security/ssh-fingerprint/)). It never runs ssh-keyscan.",
		"Check mode decides from what is in the cluster and validates changes with a server-side dry run; nothing is persisted. When the C(kubeconfig) file does not exist yet (a first run), it plans as for a new, empty cluster, with a warning.",
		"A second run with the same input sends no write to the API server.",
	},
	Spec: ansible.Spec{
		Options: append(kube.ConnectionOptions(),
			ansible.Option{Name: "namespaces", Type: ansible.TypeList, Elements: ansible.TypeStr, Format: ansible.FormatNamespace, Default: []any{},
				Description: []string{"Namespaces to create when missing (name only). Existing ones are not touched."}},
			ansible.Option{Name: "secrets", NotSecret: true, Type: ansible.TypeList, Elements: ansible.TypeDict, Default: []any{},
				Description:       []string{"Secrets to create or update. Each takes exactly one source of data: O(secrets[].data)/O(secrets[].string_data), O(secrets[].git_deploy_key), O(secrets[].git_https), O(secrets[].age_key) or O(secrets[].universal_auth)."},
				RequiredOneOf:     [][]string{{"data", "string_data", "git_deploy_key", "git_https", "age_key", "universal_auth"}},
				MutuallyExclusive: [][]string{{"data", "git_deploy_key", "git_https", "age_key", "universal_auth"}, {"string_data", "git_deploy_key", "git_https", "age_key", "universal_auth"}},
				Options: []ansible.Option{
					{Name: "name", Required: true, Format: ansible.FormatObjectName, Description: []string{"Name of the Secret."}},
					{Name: "namespace", Required: true, Format: ansible.FormatNamespace, Description: []string{"Namespace of the Secret."}},
					{Name: "type", Default: "Opaque", Description: []string{"The Secret type."}},
					{Name: "data", Type: ansible.TypeDict, NoLog: true,
						Description: []string{"Keys and base64-encoded values, as in a Secret's C(data)."}},
					{Name: "string_data", Type: ansible.TypeDict, NoLog: true,
						Description: []string{"Keys and plain values, as in a Secret's C(stringData)."}},
					{Name: "git_deploy_key", NotSecret: true, Type: ansible.TypeDict,
						Description:       []string{"A git SSH deploy key for Flux: writes C(identity), C(identity.pub) (derived from the private key) and C(known_hosts)."},
						RequiredOneOf:     [][]string{{"private_key", "private_key_file"}},
						MutuallyExclusive: [][]string{{"private_key", "private_key_file"}},
						Options: []ansible.Option{
							{Name: "private_key", NoLog: true, Description: []string{"The private key (OpenSSH or PEM, without passphrase)."}},
							{Name: "private_key_file", Type: ansible.TypePath, Format: ansible.FormatFile, Description: []string{"A file holding the private key, read on the controller."}},
							{Name: "known_hosts", Default: "github",
								Description: []string{"V(github), V(gitlab) or V(codeberg) builds the file from that forge's published SSH host keys (github.com, gitlab.com, codeberg.org), checked against their published fingerprints.", "Any other value is used as given, after each line parses as an OpenSSH known_hosts entry."}},
							{Name: "github_meta_file", Type: ansible.TypePath, Format: ansible.FormatFile,
								Description: []string{"A saved copy of U(https://api.github.com/meta) to take GitHub's keys from instead of the built-in ones, with O(secrets[].git_deploy_key.known_hosts=github) only. Each key must match its published fingerprint and one the collection pins, so a tampered file fails; a key the file does not publish a fingerprint for is left out with a warning."}},
						}},
					{Name: "git_https", Type: ansible.TypeDict,
						Description:       []string{"Git credentials for an HTTPS URL, as source-controller reads them: C(username) and C(password) (a Gitea or GitHub token works as the password), or C(bearerToken)."},
						RequiredOneOf:     [][]string{{"password", "bearer_token"}},
						MutuallyExclusive: [][]string{{"password", "bearer_token"}},
						Options: []ansible.Option{
							{Name: "username", Default: "git", Description: []string{"The username (not a secret: it stays readable in the output)."}},
							{Name: "password", NoLog: true, Description: []string{"The password or token."}},
							{Name: "bearer_token", NoLog: true, Description: []string{"A bearer token, stored under C(bearerToken) instead of a username and password."}},
							{Name: "ca_file", Type: ansible.TypePath, Format: ansible.FormatFile,
								Description: []string{"A file on the controller holding the PEM certificate(s) of the CA that signed the git server's certificate (a Gitea behind a private CA), stored under C(ca.crt)."}},
						}},
					{Name: "age_key", NotSecret: true, Type: ansible.TypeDict,
						Description:       []string{"A SOPS age identity, validated as an X25519 age key and stored under C(age.agekey)."},
						RequiredOneOf:     [][]string{{"key", "key_file"}},
						MutuallyExclusive: [][]string{{"key", "key_file"}},
						Options: []ansible.Option{
							{Name: "key", NoLog: true, Description: []string{"The identity text (C(AGE-SECRET-KEY-1...)), comments allowed."}},
							{Name: "key_file", Type: ansible.TypePath, Format: ansible.FormatFile, Description: []string{"A file holding the identity, read on the controller."}},
						}},
					{Name: "universal_auth", Type: ansible.TypeDict,
						Description: []string{"An Infisical machine identity's universal auth credentials, stored under C(clientId) and C(clientSecret), the keys the Infisical operator reads."},
						Options: []ansible.Option{
							{Name: "client_id", Required: true, NoLog: true, Description: []string{"The client ID."}},
							{Name: "client_secret", Required: true, NoLog: true, Description: []string{"The client secret."}},
						}},
				}},
			ansible.Option{Name: "config_maps", Type: ansible.TypeList, Elements: ansible.TypeDict, Default: []any{},
				Description: []string{"ConfigMaps to create when missing. One that exists is left as it is, even when its data differs (C(differs) lists the keys, with a warning): written once, then left to Flux."},
				Options: []ansible.Option{
					{Name: "name", Required: true, Format: ansible.FormatObjectName, Description: []string{"Name of the ConfigMap."}},
					{Name: "namespace", Required: true, Format: ansible.FormatNamespace, Description: []string{"Namespace of the ConfigMap."}},
					{Name: "data", Type: ansible.TypeDict, Required: true,
						Description: []string{"Keys and values: strings, numbers and booleans, stored as they read in YAML (V(true), V(3))."}},
				}},
			ansible.Option{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"V(absent) deletes the listed Secrets and ConfigMaps (namespaces are never deleted)."}},
			ansible.Option{Name: "force", Type: ansible.TypeBool, Default: false,
				Description: []string{"Update or delete a Secret, or delete a ConfigMap, even when Flux has adopted it; replace a Secret whose type differs."}},
		),
	},
	Examples: `
- name: Seed what Flux resolves for itself
  gitops.k3s_flux.seed_secret:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    namespaces: [flux-system, platform, apps]
    secrets:
      - name: git-deploy-key
        namespace: flux-system
        git_deploy_key:
          private_key_file: "{{ vault_dir }}/flux-deploy-key"
          known_hosts: github
      - name: sops-age
        namespace: flux-system
        age_key:
          key: "{{ vault_sops_age_key }}"
      - name: infisical-universal-auth
        namespace: platform
        universal_auth:
          client_id: "{{ vault_infisical_client_id }}"
          client_secret: "{{ vault_infisical_client_secret }}"
    config_maps:
      - name: cluster-vars
        namespace: flux-system
        data:
          cluster_domain: home.example.org
          worker_count: 3
`,
	Returns: []ansible.Return{
		{Name: "namespaces", Description: []string{"Each namespace and whether the task created it."}, Returned: "always", Type: "list", Sample: []any{map[string]any{"name": "flux-system", "created": true}}},
		{Name: "config_maps", Description: []string{"Each ConfigMap: its keys, whether the task created (or deleted) it, the keys whose value in the cluster differs from the one given, whether Flux has adopted it."}, Returned: "always", Type: "list",
			Sample: []any{map[string]any{"name": "cluster-vars", "namespace": "flux-system", "keys": []any{"cluster_domain"}, "created": true, "differs": []any{}, "adopted": false}}},
		{Name: "secrets", Description: []string{"Each Secret: its keys (never values), whether it changed, whether Flux has adopted it."}, Returned: "always", Type: "list",
			Sample: []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system", "type": "Opaque", "keys": []any{"identity", "identity.pub", "known_hosts"}, "changed": true, "adopted": false}}},
	},
}
