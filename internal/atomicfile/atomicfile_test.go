package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk went away") }

func TestWrite(t *testing.T) {
	tests := []struct {
		name    string
		old     string // "" means no file before
		stale   bool   // a temp file left by a killed run
		r       io.Reader
		mode    fs.FileMode
		want    string
		wantErr string
	}{
		{name: "new file in a new directory", r: strings.NewReader("token: a\n"), mode: 0o600, want: "token: a\n"},
		{name: "replaces the old file", old: "token: a\n", r: strings.NewReader("token: b\n"), mode: 0o600, want: "token: b\n"},
		{name: "mode of the new file", r: strings.NewReader("bin"), mode: 0o755, want: "bin"},
		{name: "removes a killed run's temp", stale: true, r: strings.NewReader("x"), mode: 0o600, want: "x"},
		{name: "reader fails: old file kept", old: "token: a\n", r: failingReader{}, mode: 0o600, want: "token: a\n", wantErr: "disk went away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "etc", "k3s")
			path := filepath.Join(dir, "config.yaml")
			if tt.old != "" || tt.stale {
				require.NoError(t, os.MkdirAll(dir, 0o755))
			}
			if tt.old != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.old), 0o600))
			}
			if tt.stale {
				require.NoError(t, os.WriteFile(filepath.Join(dir, ".config.yaml.tmp-123"), []byte("secret"), 0o600))
			}
			err := Write(path, tt.r, tt.mode)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), path)
			} else {
				require.NoError(t, err)
				info, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, tt.mode, info.Mode().Perm())
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			temps, _ := filepath.Glob(filepath.Join(dir, ".config.yaml.tmp-*"))
			assert.Empty(t, temps, "no temp file left behind")
		})
	}
}

func TestWriteIntoAFile(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(parent, nil, 0o600))
	err := Write(filepath.Join(parent, "config.yaml"), strings.NewReader("x"), 0o600)
	require.ErrorContains(t, err, "create directory "+parent)
}

func TestSyncDirMissing(t *testing.T) {
	err := SyncDir(filepath.Join(t.TempDir(), "gone"))
	require.ErrorContains(t, err, "sync directory")
}

func TestBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	name, err := Backup(path, []byte("token: a\n"), 0o600)
	require.NoError(t, err)
	assert.Regexp(t, `^`+path+`\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$`, name)
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, "token: a\n", string(got))
	info, err := os.Stat(name)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm())
	_, err = Backup(filepath.Join(path, "x"), nil, 0o600)
	require.ErrorContains(t, err, "back up "+path)
}
