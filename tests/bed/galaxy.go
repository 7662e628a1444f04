package bed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
)

// Release is the output of make release, served on loopback the way users
// get it: the collection tarball through Galaxy's v3 API (what
// ansible-galaxy asks a Galaxy server), the controller binaries as the
// files of a release (what the action plugins fetch).
type Release struct {
	Dir     string // make release's output
	Version string
	Tarball string // path of the collection tarball
	// URL is the Galaxy server's, for ansible-galaxy --server or
	// ANSIBLE_GALAXY_SERVER.
	URL string
	// ReleaseURL is where the release's files are, for
	// GITOPS_K3S_FLUX_RELEASE_URL.
	ReleaseURL string

	fetched atomic.Int64
	server  *http.Server
}

var releaseTarball = regexp.MustCompile(`gitops-k3s_flux-(\d+\.\d+\.\d+)\.tar\.gz`)

// BuildRelease runs make release in the tree at root, into dir/release,
// and returns its output (not yet served). Another test process's make
// release waits for this one's (a lock in root/dist): make build, which
// release runs, rewrites plugins/bin/SHA256SUMS, which release packs.
func BuildRelease(root, dir string) (*Release, error) {
	out := filepath.Join(dir, "release")
	if err := os.MkdirAll(filepath.Join(root, "dist"), 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(root, "dist", ".release.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	// The fastest xz level: the same payloads and fetch as a release's (hack/release.sh).
	cmd := exec.Command("make", "-C", root, "release", "RELEASE_DIR="+out)
	cmd.Env = append(os.Environ(), "RELEASE_XZ_LEVEL=1")
	log, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("make release: %w: %s", err, log)
	}
	m := releaseTarball.FindStringSubmatch(string(log))
	if m == nil {
		return nil, fmt.Errorf("make release did not name the tarball: %s", log)
	}
	return &Release{Dir: out, Version: m[1], Tarball: filepath.Join(out, m[0])}, nil
}

// Serve starts the Galaxy stand-in and release file server on 127.0.0.1.
// It stops with Close.
func (r *Release) Serve() error {
	raw, err := os.ReadFile(r.Tarball)
	if err != nil {
		return fmt.Errorf("read the release tarball: %w", err)
	}
	sum := sha256.Sum256(raw)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + l.Addr().String()
	r.URL = base + "/"
	r.ReleaseURL = base + "/releases/download/v" + r.Version + "/"
	collection := "/api/v3/collections/gitops/k3s_flux"
	versionURL := collection + "/versions/" + r.Version + "/"
	mux := http.NewServeMux()
	api := map[string]any{
		"/api/": map[string]any{"available_versions": map[string]string{"v3": "v3/"}},
		collection + "/": map[string]any{
			"namespace": "gitops", "name": "k3s_flux",
			"created_at": "2026-12-01T00:00:00Z", "updated_at": "2026-12-01T00:00:00Z",
			"highest_version": map[string]string{"version": r.Version, "href": versionURL},
		},
		collection + "/versions/": map[string]any{
			"meta":  map[string]int{"count": 1},
			"links": map[string]any{"next": nil},
			"data":  []map[string]string{{"version": r.Version, "href": versionURL}},
		},
		versionURL: map[string]any{
			"namespace":    map[string]string{"name": "gitops"},
			"collection":   map[string]string{"name": "k3s_flux"},
			"version":      r.Version,
			"href":         versionURL,
			"download_url": base + "/download/" + filepath.Base(r.Tarball),
			"artifact":     map[string]any{"filename": filepath.Base(r.Tarball), "sha256": hex.EncodeToString(sum[:]), "size": len(raw)},
			"metadata":     map[string]any{"dependencies": map[string]string{}},
			"signatures":   []any{},
		},
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.Path
		if !strings.HasSuffix(path, "/") {
			path += "/"
		}
		doc, ok := api[path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("/download/", func(w http.ResponseWriter, req *http.Request) {
		http.ServeFile(w, req, filepath.Join(r.Dir, filepath.Base(req.URL.Path)))
	})
	mux.HandleFunc("/releases/download/v"+r.Version+"/", func(w http.ResponseWriter, req *http.Request) {
		name := filepath.Base(req.URL.Path)
		if !strings.HasSuffix(name, ".xz") {
			http.NotFound(w, req)
			return
		}
		r.fetched.Add(1)
		http.ServeFile(w, req, filepath.Join(r.Dir, name))
	})
	r.server = &http.Server{Handler: mux}
	go func() { _ = r.server.Serve(l) }()
	return nil
}

// Fetched is how many controller binaries were fetched from the release.
func (r *Release) Fetched() int64 { return r.fetched.Load() }

// Close stops the server.
func (r *Release) Close() error {
	if r.server == nil {
		return nil
	}
	return r.server.Close()
}

// Install installs the collection the way the README says, with
// ansible-galaxy collection install -r requirements.yml from the Galaxy
// stand-in, into dir/collections; it returns that path.
func (r *Release) Install(dir string) (string, error) {
	reqs := filepath.Join(dir, "requirements.yml")
	if err := os.WriteFile(reqs, []byte("collections:\n  - name: gitops.k3s_flux\n    version: \""+r.Version+"\"\n"), 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "collections")
	// Installed into path only: without its own collections path, ansible-galaxy
	// takes a copy already in ~/.ansible/collections for this one and installs nothing.
	env, err := AnsibleEnv(filepath.Join(dir, "galaxy"), path, "")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("ansible-galaxy", "collection", "install", "-r", reqs, "-p", path)
	cmd.Env = append(env, "ANSIBLE_GALAXY_SERVER="+r.URL, "ANSIBLE_GALAXY_CACHE_DIR="+filepath.Join(dir, "galaxy-cache"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("ansible-galaxy collection install -r requirements.yml: %w: %s", err, out)
	}
	return path, nil
}
