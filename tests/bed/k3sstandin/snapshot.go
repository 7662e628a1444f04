package main

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// `k3s etcd-snapshot save|ls|delete|prune`, as k3s runs them (docs/testing.md
// cites each): the command is a client of the server running on this host
// (--etcd-server, https://127.0.0.1:6443), which takes the snapshot of its
// etcd and keeps it as <dir>/<name>-<node name>-<unix time>.

// snapshotFlags are the etcd-snapshot command's flags (pkg/cli/cmds
// etcd_snapshot.go EtcdSnapshotFlags), each alias mapped to its name, and
// whether it takes no value.
type snapshotFlag struct {
	name string
	bool bool
}

var snapshotFlags = map[string]snapshotFlag{
	"debug": {"debug", true}, "config": {"config", false}, "c": {"config", false}, "log": {"log", false}, "l": {"log", false},
	"alsologtostderr": {"alsologtostderr", true}, "node-name": {"node-name", false}, "data-dir": {"data-dir", false}, "d": {"data-dir", false},
	"etcd-token": {"etcd-token", false}, "t": {"etcd-token", false}, "etcd-server": {"etcd-server", false},
	"dir": {"dir", false}, "etcd-snapshot-dir": {"dir", false}, "name": {"name", false},
	"snapshot-compress": {"snapshot-compress", true}, "etcd-snapshot-compress": {"snapshot-compress", true},
	"s3": {"s3", true}, "etcd-s3": {"s3", true},
	"s3-endpoint": {"s3-endpoint", false}, "etcd-s3-endpoint": {"s3-endpoint", false},
	"s3-endpoint-ca": {"s3-endpoint-ca", false}, "etcd-s3-endpoint-ca": {"s3-endpoint-ca", false},
	"s3-skip-ssl-verify": {"s3-skip-ssl-verify", true}, "etcd-s3-skip-ssl-verify": {"s3-skip-ssl-verify", true},
	"s3-access-key": {"s3-access-key", false}, "etcd-s3-access-key": {"s3-access-key", false},
	"s3-secret-key": {"s3-secret-key", false}, "etcd-s3-secret-key": {"s3-secret-key", false},
	"s3-bucket": {"s3-bucket", false}, "etcd-s3-bucket": {"s3-bucket", false},
	"s3-region": {"s3-region", false}, "etcd-s3-region": {"s3-region", false},
	"s3-folder": {"s3-folder", false}, "etcd-s3-folder": {"s3-folder", false},
	"s3-insecure": {"s3-insecure", true}, "etcd-s3-insecure": {"s3-insecure", true},
	"s3-timeout": {"s3-timeout", false}, "etcd-s3-timeout": {"s3-timeout", false},
}

// parseSnapshotArgs reads the config file's keys the command knows (others
// are skipped, as configfilearg does for a command's valid flags), then the
// command line's flags; flags stop at the first argument (SkipArgReorder).
func parseSnapshotArgs(sub string, entries []entry, cli []string) (settings, []string, error) {
	s := settings{}
	for _, e := range entries {
		if f, ok := snapshotFlags[e.key]; ok && len(e.values) > 0 {
			s[f.name] = []string{e.values[len(e.values)-1]}
		}
	}
	for i := 0; i < len(cli); i++ {
		a := cli[i]
		if !strings.HasPrefix(a, "-") {
			return s, cli[i:], nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := snapshotFlags[name]
		switch {
		case !ok && sub == "ls" && (name == "o" || name == "output"):
			f = snapshotFlag{"output", false}
		case !ok && sub == "prune" && name == "snapshot-retention":
			f = snapshotFlag{"snapshot-retention", false}
		case !ok:
			return nil, nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if !hasValue {
			if f.bool {
				value = "true"
			} else if i+1 < len(cli) {
				i++
				value = cli[i]
			} else {
				return nil, nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
		}
		s[f.name] = []string{value}
	}
	return s, nil, nil
}

func runEtcdSnapshot(args []string) error {
	sub := "save" // `k3s etcd-snapshot` alone saves, as it did before the subcommands
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list", "l":
		sub = "ls"
	case "save", "ls", "delete", "prune":
	default:
		return fmt.Errorf("no help topic for '%s'", sub)
	}
	entries, _, err := loadConfig(configPathOf(args))
	if err != nil {
		return err
	}
	s, rest, err := parseSnapshotArgs(sub, entries, args)
	record("etcd-snapshot "+sub, args, nil, nil, nil, err)
	if err != nil {
		return err
	}
	dataDir := filepath.Join(s.str("data-dir", defaultDataDir), "server")
	if err := serverAnswers(s.str("etcd-server", "https://127.0.0.1:6443")); err != nil {
		return err
	}
	if _, err := os.Stat(etcdWALDir(s.str("data-dir", defaultDataDir))); err != nil {
		return fmt.Errorf("etcd database not found in %s", dataDir)
	}
	if s.bool("s3") {
		// No S3 endpoint answers in the test bed: k3s fails the request
		// when its S3 client cannot start (snapshot_handler.go handleSave).
		return fmt.Errorf("failed to initialize S3 client: bucket %q at %s: the test bed has no S3 endpoint", s.str("s3-bucket", ""), s.str("s3-endpoint", "s3.amazonaws.com"))
	}
	dir, custom := s.str("dir", ""), true
	if dir == "" {
		dir, custom = filepath.Join(dataDir, "db", "snapshots"), false
	}
	switch sub {
	case "save":
		if len(rest) > 0 {
			return errors.New("this command does not take any arguments")
		}
		return saveSnapshot(s, dir, custom)
	case "ls":
		return listSnapshots(dir, custom)
	case "delete":
		return deleteSnapshots(dir, rest)
	default:
		return pruneSnapshots(s, dir)
	}
}

// serverAnswers is the CLI's connection to the server it asks.
func serverAnswers(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return fmt.Errorf("Post \"%s/db/snapshot\": %w", strings.TrimSuffix(server, "/"), err)
	}
	return conn.Close()
}

// snapshotDirFor is the snapshot directory, made (0700) only when it is the
// default one (snapshot.go snapshotDir).
func snapshotDirFor(dir string, custom, create bool) error {
	info, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) && create && !custom {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return fmt.Errorf("failed to get etcd-snapshot-dir: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("failed to get etcd-snapshot-dir: %s is not a directory", dir)
	}
	return nil
}

func saveSnapshot(s settings, dir string, custom bool) error {
	if err := snapshotDirFor(dir, custom, true); err != nil {
		return err
	}
	node := s.str("node-name", "")
	if node == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		node = h
	}
	now := time.Now().Round(time.Second)
	name := fmt.Sprintf("%s-%s-%d", s.str("name", "on-demand"), node, now.Unix())
	configMaps, err := liveConfigMaps()
	if err != nil {
		return err
	}
	content, _ := json.Marshal(snapshotDoc{Snapshot: name, Node: node, Time: now.Format(time.RFC3339), ConfigMaps: configMaps,
		Bootstrap: bootstrapKey(clusterToken(settings{}, s.str("data-dir", defaultDataDir)))})
	path := filepath.Join(dir, name)
	// etcd's snapshot.Save writes the file 0600.
	if err := os.WriteFile(path, boltSnapshot(content), 0o600); err != nil {
		return err
	}
	if s.bool("snapshot-compress") {
		if err := zipFile(path, name); err != nil {
			return err
		}
		name += ".zip"
	}
	fmt.Fprintf(os.Stderr, "time=%q level=info msg=%q\n", now.Format(time.RFC3339), "Snapshot "+name+" saved.")
	return nil
}

func zipFile(path, name string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path+".zip", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := zip.NewWriter(f)
	z, err := w.Create(name)
	if err == nil {
		_, err = z.Write(raw)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Remove(path)
}

type snapshotFile struct {
	name string
	size int64
	at   time.Time
}

// keptSnapshots lists the files in dir, with the time from the name's
// last "-" part, else the file's (listLocalSnapshots).
func keptSnapshots(dir string) ([]snapshotFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []snapshotFile
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || info.IsDir() {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".zip")
		at := info.ModTime()
		if ts, err := strconv.ParseInt(base[strings.LastIndexByte(base, '-')+1:], 10, 64); err == nil {
			at = time.Unix(ts, 0)
		}
		out = append(out, snapshotFile{name: e.Name(), size: info.Size(), at: at})
	}
	slices.SortFunc(out, func(a, b snapshotFile) int { return a.at.Compare(b.at) })
	return out, nil
}

func listSnapshots(dir string, custom bool) error {
	if err := snapshotDirFor(dir, custom, true); err != nil {
		return err
	}
	kept, err := keptSnapshots(dir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', 0)
	fmt.Fprint(w, "Name\tLocation\tSize\tCreated\n")
	for _, k := range kept {
		fmt.Fprintf(w, "%s\tfile://%s\t%d\t%s\n", k.name, filepath.Join(dir, k.name), k.size, k.at.UTC().Format(time.RFC3339))
	}
	return w.Flush()
}

func deleteSnapshots(dir string, names []string) error {
	if len(names) == 0 {
		return errors.New("no snapshots given for removal")
	}
	for _, n := range names {
		if filepath.Base(n) != n {
			return errors.New("invalid snapshot name: path traversal not allowed")
		}
	}
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// pruneSnapshots keeps the newest --snapshot-retention (default 5) of the
// snapshots named --name (snapshotRetention).
func pruneSnapshots(s settings, dir string) error {
	keep, err := strconv.Atoi(s.str("snapshot-retention", "5"))
	if err != nil {
		return fmt.Errorf("invalid value for -snapshot-retention: %w", err)
	}
	kept, err := keptSnapshots(dir)
	if err != nil {
		return err
	}
	prefix := s.str("name", "on-demand") + "-"
	var named []snapshotFile
	for _, k := range kept {
		if strings.HasPrefix(k.name, prefix) {
			named = append(named, k)
		}
	}
	for len(named) > keep && keep > 0 {
		if err := os.Remove(filepath.Join(dir, named[0].name)); err != nil {
			return err
		}
		named = named[1:]
	}
	return nil
}
