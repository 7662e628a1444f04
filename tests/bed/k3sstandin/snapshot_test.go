package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/etcdsnapshot"
)

func TestParseSnapshotArgs(t *testing.T) {
	config := []entry{{key: "etcd-s3-bucket", values: []string{"backups"}}, {key: "node-name", values: []string{"node1"}},
		{key: "cluster-init", values: []string{"true"}}, {key: "etcd-s3", values: []string{"true"}}}
	for _, tc := range []struct {
		name string
		sub  string
		cli  []string
		want settings
		rest []string
		err  string
	}{
		{name: "the config's keys the command knows, under their names", sub: "save", cli: []string{"--name", "pre"},
			want: settings{"s3-bucket": {"backups"}, "node-name": {"node1"}, "s3": {"true"}, "name": {"pre"}}},
		{name: "flags stop at the first argument", sub: "delete", cli: []string{"--s3=false", "a", "--name", "b"},
			want: settings{"s3-bucket": {"backups"}, "node-name": {"node1"}, "s3": {"false"}}, rest: []string{"a", "--name", "b"}},
		{name: "output is ls's only", sub: "save", cli: []string{"-o", "json"}, err: "flag provided but not defined: -o"},
		{name: "a server flag is not the command's", sub: "save", cli: []string{"--cluster-init"}, err: "flag provided but not defined: -cluster-init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rest, err := parseSnapshotArgs(tc.sub, config, tc.cli)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s)
			assert.Equal(t, tc.rest, rest)
		})
	}
}

func TestSnapshotFiles(t *testing.T) {
	saved := liveConfigMaps
	t.Cleanup(func() { liveConfigMaps = saved })
	liveConfigMaps = func() ([]configMapRecord, error) {
		return []configMapRecord{{Namespace: "default", Name: "kept", Data: map[string]string{"a": "1"}}}, nil
	}
	dir := t.TempDir()
	s := settings{"name": {"pre"}, "node-name": {"node1"}}
	require.NoError(t, saveSnapshot(s, filepath.Join(dir, "default"), false), "the default directory is made")
	assert.Error(t, saveSnapshot(s, filepath.Join(dir, "custom"), true), "another must exist")
	for _, name := range []string{"pre-node1-100", "pre-node1-200", "other-node1-50"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "default", name), nil, 0o600))
	}
	kept, err := keptSnapshots(filepath.Join(dir, "default"))
	require.NoError(t, err)
	require.Len(t, kept, 4)
	assert.Equal(t, "other-node1-50", kept[0].name, "oldest first, by the time in the name")
	info, err := os.Stat(filepath.Join(dir, "default"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	// Retention counts only the snapshots of the name: the newest "pre" one stays, and "other".
	require.NoError(t, pruneSnapshots(settings{"name": {"pre"}, "snapshot-retention": {"1"}}, filepath.Join(dir, "default")))
	kept, err = keptSnapshots(filepath.Join(dir, "default"))
	require.NoError(t, err)
	require.Len(t, kept, 2)
	assert.Equal(t, "other-node1-50", kept[0].name)
	assert.Regexp(t, `^pre-node1-\d{10}$`, kept[1].name, "the one saved now")
	assert.EqualError(t, deleteSnapshots(dir, []string{"../etc/passwd"}), "invalid snapshot name: path traversal not allowed")
	assert.EqualError(t, deleteSnapshots(dir, nil), "no snapshots given for removal")
}

func TestSnapshotContent(t *testing.T) {
	saved := liveConfigMaps
	t.Cleanup(func() { liveConfigMaps = saved })
	liveConfigMaps = func() ([]configMapRecord, error) {
		return []configMapRecord{{Namespace: "default", Name: "kept", Data: map[string]string{"a": "1"}}}, nil
	}
	dir := t.TempDir()
	require.NoError(t, saveSnapshot(settings{"name": {"z"}, "node-name": {"node1"}, "snapshot-compress": {"true"}}, dir, false))
	kept, err := keptSnapshots(dir)
	require.NoError(t, err)
	require.Len(t, kept, 1)
	assert.Regexp(t, `^z-node1-\d{10}\.zip$`, kept[0].name, "compressed, as k3s names it")
	require.NoError(t, etcdsnapshot.Check(filepath.Join(dir, kept[0].name)), "what k3s_etcd_restore takes for an etcd snapshot")
	raw, err := readSnapshotFile(filepath.Join(dir, kept[0].name))
	require.NoError(t, err)
	payload, err := restoredPayload(raw)
	require.NoError(t, err)
	var doc snapshotDoc
	require.NoError(t, json.Unmarshal(payload, &doc))
	_, err = restoredPayload(raw[:len(raw)/2])
	assert.EqualError(t, err, "snapshot missing hash but --skip-hash-check=false", "a copy cut short, as etcd refuses it")
	changed := bytes.Clone(raw)
	changed[5*boltPageSize] ^= 1
	_, err = restoredPayload(changed)
	assert.ErrorContains(t, err, "expected sha256 ")
	assert.Equal(t, []configMapRecord{{Namespace: "default", Name: "kept", Data: map[string]string{"a": "1"}}}, doc.ConfigMaps)
	_, err = readSnapshotFile(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
