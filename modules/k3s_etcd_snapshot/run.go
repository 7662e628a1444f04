package k3setcdsnapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// host is what Run needs of the node.
type host struct {
	// K3s runs the k3s binary: its standard output, or an error carrying
	// k3s's own message.
	K3s func(ctx context.Context, args ...string) (string, error)
	// Secrets are the credential values in k3s's config files.
	Secrets func() []string
	Now     func() time.Time
}

// snapshot is one line of `k3s etcd-snapshot ls`.
type snapshot struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	Size     int64  `json:"size"`
	Created  string `json:"created"`
}

type args struct {
	Name string `json:"name"`
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,98}[a-z0-9])?$`)

// run takes the snapshot (not in check mode) and lists the kept ones.
func run(ctx context.Context, req *ansible.Request, h host) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if !validName.MatchString(a.Name) {
		return nil, fmt.Errorf("name must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 100 characters (k3s makes a file and an object name of it), got %q", a.Name)
	}
	for _, s := range h.Secrets() {
		req.AddSecret(s)
	}
	res := &ansible.Result{Changed: true}
	if req.CheckMode {
		kept, err := list(ctx, h)
		if err != nil {
			return nil, err
		}
		res.Set("snapshots", kept)
		res.Msg = fmt.Sprintf("would take an etcd snapshot named %s-<node name>-<unix time>", a.Name)
		return res, nil
	}
	start := h.Now()
	if _, err := h.K3s(ctx, "etcd-snapshot", "save", "--name", a.Name); err != nil {
		return nil, fmt.Errorf("k3s etcd-snapshot save --name %s: %w", a.Name, err)
	}
	kept, err := list(ctx, h)
	if err != nil {
		return nil, err
	}
	taken, ok := newest(kept, a.Name, start)
	if !ok {
		return nil, fmt.Errorf("k3s etcd-snapshot save --name %s succeeded, but k3s etcd-snapshot ls lists no snapshot %s-<node name>-<time> taken since %s", a.Name, a.Name, start.UTC().Format(time.RFC3339))
	}
	res.Set("snapshot", taken)
	res.Set("snapshots", kept)
	res.Msg = fmt.Sprintf("took etcd snapshot %s (%s)", taken.Name, taken.Location)
	return res, nil
}

func list(ctx context.Context, h host) ([]snapshot, error) {
	out, err := h.K3s(ctx, "etcd-snapshot", "ls")
	if err != nil {
		return nil, fmt.Errorf("k3s etcd-snapshot ls: %w", err)
	}
	return parseList(out), nil
}

// parseList reads the table `k3s etcd-snapshot ls` prints: "Name Location
// Size Created", the location file://<path> or s3://<bucket>/<key>, every
// row so since k3s v1.27 (pkg/cli/etcdsnapshot, list); k3s before listed
// S3's as "Name Size Created" (location s3). Oldest first.
func parseList(out string) []snapshot {
	kept := []snapshot{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "Name" {
			continue
		}
		s := snapshot{Name: f[0], Location: "s3"}
		if len(f) >= 4 {
			s.Location = f[1]
		}
		size, err := strconv.ParseInt(f[len(f)-2], 10, 64)
		if err != nil {
			continue // a log line, not a row
		}
		s.Size, s.Created = size, f[len(f)-1]
		kept = append(kept, s)
	}
	slices.SortStableFunc(kept, func(a, b snapshot) int { return strings.Compare(a.Created, b.Created) })
	return kept
}

// newest is the latest snapshot named name-<node>-<time> created since
// start (k3s rounds the time to the second), a local one before one in S3.
func newest(kept []snapshot, name string, start time.Time) (snapshot, bool) {
	var best snapshot
	var bestAt time.Time
	found := false
	for _, s := range kept {
		at, err := time.Parse(time.RFC3339, s.Created)
		if err != nil || !strings.HasPrefix(s.Name, name+"-") || at.Before(start.Add(-time.Second).Truncate(time.Second)) {
			continue
		}
		if !found || at.After(bestAt) || (at.Equal(bestAt) && inS3(best) && !inS3(s)) {
			best, bestAt, found = s, at, true
		}
	}
	return best, found
}

// inS3 says whether the snapshot is the copy in S3 (k3s lists one taken
// with etcd-s3 twice, on the node and in the bucket, both at one time).
func inS3(s snapshot) bool {
	return s.Location == "s3" || strings.HasPrefix(s.Location, "s3://")
}

// runK3s runs the k3s binary at path.
func runK3s(path string) func(ctx context.Context, args ...string) (string, error) {
	return func(ctx context.Context, args ...string) (string, error) {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("k3s is not installed here (%s): snapshots are taken on a server that runs k3s with embedded etcd", path)
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s", k3snode.FatalMessage(stderr.String(), err))
		}
		return stdout.String(), nil
	}
}
