package etcdsnapshot

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/etcdsnapshot/etcdsnapshottest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func zipped(t *testing.T, files map[string][]byte) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, content := range files {
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		require.NoError(t, err)
		_, err = f.Write(content)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestCheckSnapshot(t *testing.T) {
	good := etcdsnapshottest.Snapshot(etcdsnapshottest.BoltDB(4096, 6, nil))
	passwd, _ := os.ReadFile("/etc/passwd")
	if len(passwd) == 0 {
		passwd = []byte("root:x:0:0:root:/root:/bin/bash\n")
	}
	badMeta := etcdsnapshottest.BoltDB(4096, 6, nil)
	badMeta[16+20] ^= 0xff // meta 0's root bucket, after its checksum was taken
	badMeta[4096+16+20] ^= 0xff
	for _, tc := range []struct {
		name    string
		file    string
		content []byte
		err     string // "" when it is an etcd snapshot
	}{
		{name: "a snapshot as etcd saves it", content: good},
		{name: "pages of 16 KiB (arm64 kernels)", content: etcdsnapshottest.Snapshot(etcdsnapshottest.BoltDB(16384, 5, nil))},
		{name: "zipped, as etcd-snapshot-compress writes it", file: "s.zip", content: zipped(t, map[string][]byte{"s": good})},
		{name: "/etc/passwd", content: passwd, err: "it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)"},
		{name: "empty", content: nil, err: "it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)"},
		{name: "cut short", content: good[:len(good)/2],
			err: "it is cut short: its header counts 6 pages of 4096 bytes (24576 bytes) and etcd appends a 32-byte sha256, the file has 12304 bytes (a copy that stopped early?)"},
		{name: "cut short to a page boundary", content: good[:4*4096],
			err: "it is cut short: its header counts 6 pages of 4096 bytes (24576 bytes) and etcd appends a 32-byte sha256, the file has 16384 bytes (a copy that stopped early?)"},
		{name: "the live database, not a snapshot", content: etcdsnapshottest.BoltDB(4096, 6, nil),
			err: "it ends without the sha256 etcd's snapshot save appends (a copy of the live database, server/db/etcd/member/snap/db, is no snapshot), and k3s refuses it"},
		{name: "changed after it was saved", content: func() []byte { c := bytes.Clone(good); c[5*4096] ^= 1; return c }(),
			err: "the sha256 at its end does not match its content: it changed after etcd saved it"},
		{name: "damaged header", content: etcdsnapshottest.Snapshot(badMeta), err: "both bbolt meta pages fail their checksum: the header is damaged"},
		{name: "another bbolt version", content: etcdsnapshottest.Snapshot(etcdsnapshottest.BoltDB(4096, 6, func(m []byte) { binary.LittleEndian.PutUint32(m[4:], 1) })),
			err: "its bbolt format version is 1, etcd's is 2"},
		{name: "a page size etcd never writes", content: etcdsnapshottest.Snapshot(etcdsnapshottest.BoltDB(4096, 6, func(m []byte) { binary.LittleEndian.PutUint32(m[8:], 3000) })),
			err: "its bbolt page size 3000 is none etcd writes (a power of two from 1 KiB to 64 KiB)"},
		{name: "fewer pages than a database has", content: etcdsnapshottest.Snapshot(etcdsnapshottest.BoltDB(4096, 6, func(m []byte) { binary.LittleEndian.PutUint64(m[40:], 2) })),
			err: "its bbolt header counts 2 pages, fewer than the 4 of an empty database"},
		{name: "a zip of two files", file: "s.zip", content: zipped(t, map[string][]byte{"a": good, "b": good}),
			err: "it is a zip archive of 2 files; a compressed k3s snapshot holds one"},
		{name: "a zip of something else", file: "s.zip", content: zipped(t, map[string][]byte{"s": passwd}),
			err: "s in the zip archive: it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)"},
		{name: "a zip cut short", file: "s.zip", content: zipped(t, map[string][]byte{"s": good})[:100],
			err: "it is no zip archive k3s can open (zip: not a valid zip file)"},
		{name: "a zip not named .zip", content: zipped(t, map[string][]byte{"s": good}),
			err: "it is a zip archive, and k3s unzips only a snapshot whose name ends in .zip: name it so"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.file
			if name == "" {
				name = "snap"
			}
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(path, tc.content, 0o600))
			err := Check(path)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, "snapshot "+path+" is not an etcd snapshot k3s can restore: "+tc.err+"; nothing was changed", err.Error())
			assert.False(t, strings.Contains(err.Error(), "\n"))
		})
	}
}
