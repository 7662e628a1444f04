package k3sconfig

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
)

// tlsContent maps a config's tls key that holds PEM content to the key k3s
// reads (a path on the node) and the file the content is written to.
var tlsContent = []struct{ key, fileKey, file, pemType string }{
	{"ca", "ca_file", "ca.crt", "CERTIFICATE"},
	{"cert", "cert_file", "client.crt", "CERTIFICATE"},
	{"key", "key_file", "client.key", "PRIVATE KEY"},
}

// TLSDirName is the directory, beside the registries file, that holds the
// TLS files given as content; k3s_registries owns it (files it did not
// write there are removed).
const TLSDirName = "registries-tls"

// tlsDir is where the TLS content of the registries file at path goes.
func tlsDir(path string) string {
	return filepath.Join(filepath.Dir(path), TLSDirName)
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// tlsFiles validates a config's tls content keys (ca, cert, key: PEM), and
// returns the tls entry with each replaced by its *_file path under dir and
// the files to write. where names the config in errors; no error holds the
// content.
func tlsFiles(where, dir, host string, t map[string]node, content map[string]any) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, c := range tlsContent {
		raw, ok := content[c.key]
		if !ok {
			continue
		}
		if _, both := t[c.fileKey]; both {
			return nil, fmt.Errorf("%s.tls: %s and %s both given: give the content (%s) or a path on the node (%s)", where, c.key, c.fileKey, c.key, c.fileKey)
		}
		s, ok := raw.(string)
		block, _ := pem.Decode([]byte(s))
		if !ok || block == nil || !strings.HasSuffix(block.Type, c.pemType) {
			// Not the value: it may be a key.
			return nil, fmt.Errorf("%s.tls.%s: expected PEM content (-----BEGIN %s-----), got %s", where, c.key, c.pemType, describePEM(raw, block))
		}
		path := filepath.Join(dir, unsafeFileChars.ReplaceAllString(host, "_"), c.file)
		t[c.fileKey] = path
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		files[path] = []byte(s)
	}
	return files, nil
}

// describePEM says what a value that is not the expected PEM is, without
// showing it.
func describePEM(raw any, block *pem.Block) string {
	if _, ok := raw.(string); !ok {
		return typeName(raw)
	}
	if block != nil {
		return "a PEM " + block.Type
	}
	return "a string that is not PEM"
}

// tlsSecretValues are the private keys in a raw configs dict, masked like a
// no_log option even when validation fails: any string under a key named
// key or one slip from it, and any string that holds a PEM private key (the
// certificates are public).
func tlsSecretValues(configs any) []string {
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch t := v.(type) {
		case string:
			if key == "key" || ansible.OneSlip(key, "key") || strings.Contains(t, "PRIVATE KEY-----") {
				out = append(out, t, strings.TrimSpace(t))
			}
		case map[string]any:
			for k, e := range t {
				walk(k, e)
			}
		case []any:
			for _, e := range t {
				walk(key, e)
			}
		}
	}
	walk("", configs)
	return out
}

// tlsChange is what convergeTLS did, or would do in check mode.
type tlsChange struct {
	changed bool // anything written, removed or its mode fixed
	restart bool // content k3s reads changed
	diffs   []ansible.Diff
}

// convergeTLS makes dir hold exactly files (path to content), each 0600
// root:root in a 0700 directory per registry: a changed or missing file is
// written atomically, a file no registry gives any more removed, nothing
// written in check mode. The key's content never shows in a diff.
func convergeTLS(checkMode bool, dir string, files map[string][]byte) (tlsChange, error) {
	var ch tlsChange
	existing, err := filesUnder(dir)
	if err != nil {
		return ch, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		cur, err := readCurrent(p)
		if err != nil {
			return ch, err
		}
		contentChanged := !cur.Exists || !bytes.Equal(cur.Content, files[p])
		if !contentChanged && !cur.WrongPerm {
			continue
		}
		ch.changed = true
		if contentChanged {
			ch.restart = true
			ch.diffs = append(ch.diffs, tlsDiff(p, cur, string(files[p])))
		}
		if checkMode {
			continue
		}
		if !contentChanged {
			if err := fixPermissions(p); err != nil {
				return ch, err
			}
			continue
		}
		// k3s's own directory as k3s makes it, then the module's, root only.
		for _, d := range []struct {
			path string
			mode fs.FileMode
		}{{filepath.Dir(dir), 0o755}, {filepath.Dir(p), 0o700}} {
			if err := os.MkdirAll(d.path, d.mode); err != nil {
				return ch, fmt.Errorf("make %s: %w", d.path, err)
			}
		}
		if err := atomicfile.Write(p, bytes.NewReader(files[p]), fileMode); err != nil {
			return ch, err
		}
	}
	for _, p := range existing {
		if _, keep := files[p]; keep {
			continue
		}
		ch.changed, ch.restart = true, true
		cur, err := readCurrent(p)
		if err != nil {
			return ch, err
		}
		ch.diffs = append(ch.diffs, tlsDiff(p, cur, ""))
		if !checkMode {
			if err := remove(p); err != nil {
				return ch, err
			}
		}
	}
	if !checkMode {
		removeEmptyDirs(dir)
	}
	return ch, nil
}

// tlsDiff is a file's diff; a key file shows only that it changed.
func tlsDiff(path string, cur current, after string) ansible.Diff {
	before := string(cur.Content)
	if filepath.Base(path) == "client.key" {
		if cur.Exists {
			before = ansible.Redacted + "\n"
		}
		if after != "" {
			after = ansible.RedactedAs(cur.Exists) + "\n"
		}
	}
	return ansible.Diff{Before: before, After: after, BeforeHeader: path, AfterHeader: path}
}

// filesUnder lists the regular files in dir's registry directories.
func filesUnder(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return filepath.SkipDir
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// removeEmptyDirs removes the registry directories under dir that hold
// nothing, then dir itself when empty (best effort: a leftover empty
// directory changes nothing k3s reads).
func removeEmptyDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}
