//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// jobUID is the user the execution environment's jobs run as: none of this machine's, as
// OpenShift gives a container a random UID that no passwd entry names.
const jobUID = 1000570000

// TestExecutionEnvironment runs the bootstrap play as an execution environment (AWX, Automation
// Controller) runs a job. The image: the installed release copied and its controller binary put
// in place by examples/execution-environment/place_controller_binary.py as root, as the image's
// build does, then made read-only. The job: a random UID with no home at all (a private mount
// namespace lays an empty tmpfs over /root; HOME names nothing), Ansible's temporary files in
// the job's own directory, the project checkout (the user's repository, inventory and
// variables) its own, and nowhere to fetch a controller binary from (GITOPS_K3S_FLUX_RELEASE_URL
// names a directory that does not exist, so a fetch fails naming it). The first job converges,
// Flux included; a second job from a fresh checkout changes nothing on the nodes. The jobs run
// in a network namespace on the bed's subnet alone: the hosts and the cluster's API, nothing else.
func TestExecutionEnvironment(t *testing.T) {
	// Mostly waiting on k3s and Flux: beside the other waiting tests.
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfx", Subnet: "10.213.22", Controllers: 1, Workers: 1, Flux: true})
	// The job's network: the bed's subnet alone, as an EE job's reaches the managed hosts and the
	// cluster's API, and not GitHub (nor anything on this machine's loopback).
	bridgeMAC := func() string {
		raw, err := os.ReadFile(filepath.Join("/sys/class/net", b.Hosts.Bridge, "address"))
		require.NoError(t, err)
		return strings.TrimSpace(string(raw))
	}
	before := bridgeMAC()
	netns, err := b.Hosts.Isolated("job", 5)
	require.NoError(t, err)
	// The hosts' ARP caches hold the bridge's address: a port added under them must not change it.
	require.Equal(t, before, bridgeMAC(), "the bridge's MAC address after the job's port was added")

	t.Run("the job's network reaches the bed and nothing else", func(t *testing.T) {
		out, err := exec.Command("ip", "-n", netns, "-4", "-o", "route").CombinedOutput()
		require.NoError(t, err, "%s", out)
		routes := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.Len(t, routes, 1, "one route, no default: %s", out)
		subnet := strings.TrimSuffix(b.Hosts.BridgeAddr, ".1") + ".0/24"
		assert.True(t, strings.HasPrefix(routes[0], subnet+" dev eth0 "), "%s, not %s", routes[0], subnet)
		dial := func(url string) error {
			u, err := neturl.Parse(url)
			require.NoError(t, err)
			probe := exec.Command("ip", "netns", "exec", netns, ansiblePython(t), "-c",
				"import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 3).close()", u.Hostname(), u.Port())
			if out, err := probe.CombinedOutput(); err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}
		assert.NoError(t, dial(b.APIServer), "the API server, on the bridge")
		assert.Error(t, dial(installed.release.ReleaseURL), "the release server on this machine's loopback")
	})

	collections := sharedDir(t, 0)
	require.NoError(t, exec.Command("cp", "-a", c.path+"/.", collections).Run())
	root := filepath.Join(collections, "ansible_collections", "gitops", "k3s_flux")
	controller := filepath.Join(root, "plugins", "bin", "linux_amd64", "controller")
	require.NoFileExists(t, controller, "the release carries no controller binary")
	built := filepath.Join(t.TempDir(), "image-built")

	t.Run("the image's build places the controller binary", func(t *testing.T) {
		place := exec.Command(ansiblePython(t), "-B", filepath.Join(root, "examples", "execution-environment", "place_controller_binary.py"), collections)
		place.Env = append(bed.EnvWithout("ANSIBLE_", "GITOPS_K3S_FLUX_"), "GITOPS_K3S_FLUX_RELEASE_URL="+installed.release.ReleaseURL)
		out, err := place.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "placed "+controller)
		st, err := os.Stat(controller)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
		entries, err := os.ReadDir(filepath.Dir(controller))
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"controller", "k3s_config", "k3s_node"}, names, "nothing else left beside it")
		// Read-only, as an image's layers are to the job's user.
		require.NoError(t, exec.Command("chmod", "-R", "a-w", collections).Run())
		// What the jobs write is what is newer than this, made once the image is: not the
		// binary's own time, which its directory's is after by a clock tick when the placing's
		// rename came a tick after its write (a loaded machine: a test that failed once so).
		require.NoError(t, os.WriteFile(built, nil, 0o600))
	})

	// The user's variables and files, the same for every job (as a vault would give them): made
	// once, copied into each checkout.
	staging := sharedDir(t, 0)
	stagedVars, secrets, err := b.WritePlayVars(staging)
	require.NoError(t, err)
	var outputs []string
	job := func(t *testing.T) (playResult, string) {
		t.Helper()
		project, tmp := sharedDir(t, jobUID), sharedDir(t, jobUID)
		repo := filepath.Join(project, "repo")
		require.NoError(t, exec.Command("cp", "-a", bed.RepoFixture(), repo).Run())
		play := filepath.Join(project, "play")
		require.NoError(t, exec.Command("cp", "-a", staging, play).Run())
		varsFile := filepath.Join(play, filepath.Base(stagedVars))
		// What the project holds instead of the bed's files: the deploy key, the SSH key and
		// known hosts of the test hosts, the repository.
		vars := map[string]any{}
		raw, err := os.ReadFile(varsFile)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(string(raw), staging+"/", play+"/")), &vars))
		vars["flux_bootstrap_git_deploy_key_file"] = copyInto(t, vars["flux_bootstrap_git_deploy_key_file"].(string), project)
		vars["flux_bootstrap_repo_dir"] = repo
		vars["k8s_cluster_kubeconfig_dest"] = filepath.Join(project, ".generated", "kubeconfig")
		vars["flux_bootstrap_kubeconfig"] = filepath.Join(project, ".generated", "kubeconfig")
		writeJSON(t, varsFile, vars)
		inventory, err := os.ReadFile(b.Hosts.Inventory)
		require.NoError(t, err)
		rewritten := strings.NewReplacer(b.Hosts.KeyFile, copyInto(t, b.Hosts.KeyFile, project), b.Hosts.KnownHosts, copyInto(t, b.Hosts.KnownHosts, project)).Replace(string(inventory))
		require.NoError(t, os.WriteFile(filepath.Join(project, "inventory.ini"), []byte(rewritten), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(project, "ansible.cfg"), []byte("[defaults]\n"), 0o600))
		// Ansible's own temporary files of the tasks on the controller (remote_tmp of localhost,
		// ~/.ansible/tmp by default) in the job's directory: the job has no home to put them in.
		require.NoError(t, os.Mkdir(filepath.Join(project, "host_vars"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(project, "host_vars", "localhost.yml"), []byte("ansible_remote_tmp: "+filepath.Join(tmp, "remote")+"\n"), 0o600))
		require.NoError(t, exec.Command("chown", "-R", fmt.Sprintf("%d:0", jobUID), project).Run())

		r := asJob(t, netns, project, tmp, collections, "-i", filepath.Join(project, "inventory.ini"), "gitops.k3s_flux.k8s", "-e", "@"+varsFile)
		outputs = append(outputs, r.output)
		return r, project
	}

	t.Run("a first job converges", func(t *testing.T) {
		r, project := job(t)
		require.NoError(t, r.err, r.output)
		assert.Greater(t, r.changed()["node1"], 0)
		assert.FileExists(t, filepath.Join(project, ".generated", "kubeconfig"))
		assert.NotContains(t, r.output, "file:///nonexistent", "no controller binary fetched")
	})

	t.Run("a second job from a fresh checkout changes nothing on the nodes", func(t *testing.T) {
		r, _ := job(t)
		require.NoError(t, r.err, r.output)
		// Its one change: the kubeconfig written into the new checkout (on the controller, as
		// delegated from node1).
		changed := regexp.MustCompile(`(?m)^changed: \[.*\]$`).FindAllString(r.output, -1)
		assert.Equal(t, []string{"changed: [node1 -> localhost]"}, changed, r.output)
		assert.Equal(t, 0, r.changed()["localhost"], r.output)
	})

	t.Run("nothing written into the read-only collection, no secret in any output", func(t *testing.T) {
		out, err := exec.Command("find", collections, "-newer", built, "-print").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Empty(t, strings.TrimSpace(string(out)))
		for _, o := range outputs {
			for _, s := range secrets {
				assert.NotContains(t, o, s)
			}
		}
	})
}

// ansiblePython is the Python of this pass's ansible-playbook (its #! line): the one with
// ansible-core, which the collection's plugin code imports.
func ansiblePython(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("ansible-playbook")
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(strings.TrimPrefix(first, "#!"))
	require.NotEmpty(t, fields, "%s has no #! line", path)
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return fields[len(fields)-1]
	}
	return fields[0]
}

// sharedDir is a new directory under /tmp that uid owns (mode 0700), removed after the test: not
// under t.TempDir, whose parent only root may enter.
func sharedDir(t *testing.T, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "k3sf-ee-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if uid != 0 {
		require.NoError(t, os.Chown(dir, uid, 0))
	} else {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	return dir
}

// copyInto copies the file at path into dir (mode 0600) and returns the copy's path.
func copyInto(t *testing.T, path, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dest := filepath.Join(dir, filepath.Base(path))
	require.NoError(t, os.WriteFile(dest, raw, 0o600))
	return dest
}

// asJob runs ansible-playbook from project as jobUID in the network namespace netns and a mount
// namespace of its own, where an empty tmpfs covers /root (the ansible-core venv of the second
// pass, under /root, bound back in at its path, read-only), with only the job's environment.
func asJob(t *testing.T, netns, project, tmp, collections string, args ...string) playResult {
	t.Helper()
	playbook, err := exec.LookPath("ansible-playbook")
	require.NoError(t, err)
	venv := ""
	if strings.HasPrefix(playbook, "/root/") {
		venv = filepath.Dir(filepath.Dir(playbook))
	}
	keep := sharedDir(t, 0)
	// ssh refuses a user without a passwd entry ("No user exists for uid"): an execution
	// environment's entrypoint (ansible-builder's _build/scripts/entrypoint) adds one for the random
	// UID to /etc/passwd, which the image leaves group-writable for it. Here a copy with that line is
	// bound over /etc/passwd in the job's namespace alone; its home names nothing.
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	passwd = append(passwd, fmt.Sprintf("job:x:%d:0:execution environment job:/nonexistent:/bin/sh\n", jobUID)...)
	require.NoError(t, os.WriteFile(filepath.Join(keep, "passwd"), passwd, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(keep, "venv"), 0o755))
	script := `set -e
venv="$1" keep="$2"; shift 2
mount --bind -o ro "$keep/passwd" /etc/passwd
[ -z "$venv" ] || mount --bind -o ro "$venv" "$keep/venv"
mount -t tmpfs -o mode=0755,size=1m tmpfs /root
[ -z "$venv" ] || { mkdir -p "$venv"; mount --bind -o ro "$keep/venv" "$venv"; }
exec setpriv --reuid=` + strconv.Itoa(jobUID) + ` --regid=0 --clear-groups "$@"`
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/nonexistent",
		"LANG=C.UTF-8",
		"ANSIBLE_CONFIG=" + filepath.Join(project, "ansible.cfg"),
		"ANSIBLE_HOME=" + filepath.Join(tmp, "ansible"),
		"ANSIBLE_COLLECTIONS_PATH=" + collections,
		"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false",
		"ANSIBLE_LOCAL_TEMP=" + filepath.Join(tmp, "local"),
		"ANSIBLE_SSH_CONTROL_PATH_DIR=" + filepath.Join(tmp, "cp"),
		"ANSIBLE_PIPELINING=" + strconv.FormatBool(pipelining()),
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"GITOPS_K3S_FLUX_RELEASE_URL=file:///nonexistent/k3s_flux/",
	}
	r := runIn(context.Background(), project, env, "ip", append([]string{"netns", "exec", netns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", venv, keep, "ansible-playbook"}, args...)...)
	noteFailure(t, r)
	return r
}
