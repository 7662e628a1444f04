// Package etcdsnapshot tells a file k3s can restore as an etcd snapshot from
// one it cannot, before anything stops: module k3s_etcd_restore refuses the
// latter, and the test bed's k3s stand-in checks its snapshots against it.
package etcdsnapshot

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
)

// What a k3s etcd snapshot is, read from the file before anything stops:
// k3s saves it with etcd's snapshot save (pkg/etcd/snapshot.go), which
// writes etcd's bbolt database and then the sha256 of it; with
// etcd-snapshot-compress, k3s zips that file alone and restores a name
// ending in .zip by unzipping it (etcd.go Restore). etcd's restore refuses
// a file without the sha256 or whose sha256 does not match (etcdutl
// snapshot's saveDB); bbolt refuses a file whose meta pages are not valid
// (internal/common/meta.go Validate). The layout below is bbolt's; the
// node binary parses it itself rather than import bbolt.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16 // page id, flags, count, overflow
	metaSize       = 64 // magic, version, page size, flags, root bucket (16), freelist, pgid, txid, checksum
	checksumAt     = 56 // the FNV-64a covers the meta up to its checksum
	minPageSize    = 1 << 10
	maxPageSize    = 1 << 16 // the largest page a Linux kernel has (ppc64le, some arm64)
	minPages       = 4       // two meta pages, the freelist and the root bucket's leaf
	hashSize       = sha256.Size
)

// notSnapshot is why a file is not a snapshot k3s can restore.
type notSnapshot struct{ reason string }

func (e *notSnapshot) Error() string { return e.reason }

func refuse(format string, a ...any) error { return &notSnapshot{fmt.Sprintf(format, a...)} }

// Check reads the file at path and refuses one k3s's restore would
// fail on (after moving the etcd data aside): no bbolt database, a damaged
// header, a file cut short, no sha256 or a wrong one, a zip archive that
// is not one such file.
func Check(path string) error {
	err := checkSnapshotFile(path)
	var not *notSnapshot
	if errors.As(err, &not) {
		return fmt.Errorf("snapshot %s is not an etcd snapshot k3s can restore: %s; nothing was changed", path, not.reason)
	}
	if err != nil {
		return fmt.Errorf("snapshot %s: %w; nothing was changed", path, err)
	}
	return nil
}

func checkSnapshotFile(path string) error {
	if strings.HasSuffix(path, ".zip") {
		return checkZipped(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 4 && string(magic[:]) == "PK\x03\x04" {
		return refuse("it is a zip archive, and k3s unzips only a snapshot whose name ends in .zip: name it so")
	}
	return checkDB(f, info.Size())
}

// checkZipped checks a compressed snapshot: one file, an etcd snapshot.
func checkZipped(path string) error {
	z, err := zip.OpenReader(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return err
		}
		return refuse("it is no zip archive k3s can open (%v)", err)
	}
	defer z.Close()
	if len(z.File) != 1 {
		return refuse("it is a zip archive of %d files; a compressed k3s snapshot holds one", len(z.File))
	}
	entry := z.File[0]
	r, err := entry.Open()
	if err != nil {
		return refuse("%s in the zip archive cannot be read (%v)", entry.Name, err)
	}
	defer r.Close()
	err = checkDB(r, int64(entry.UncompressedSize64))
	var not *notSnapshot
	if errors.As(err, &not) {
		return refuse("%s in the zip archive: %s", entry.Name, not.reason)
	}
	return err
}

// checkDB reads size bytes from r: a bbolt database whose header is valid,
// as long as its high-water mark says, then the sha256 of all before it.
func checkDB(r io.Reader, size int64) error {
	head := make([]byte, min(size, maxPageSize+pageHeaderSize+metaSize))
	if _, err := io.ReadFull(r, head); err != nil {
		return err
	}
	m, err := chooseMeta(head)
	if err != nil {
		return err
	}
	dbSize := int64(m.pgid) * int64(m.pageSize)
	short := refuse("it is cut short: its header counts %d pages of %d bytes (%d bytes) and etcd appends a %d-byte sha256, the file has %d bytes (a copy that stopped early?)",
		m.pgid, m.pageSize, dbSize, hashSize, size)
	if size < dbSize {
		return short
	}
	// etcd finds the sha256 so (etcdutl's saveDB, client/v3's snapshot save).
	if size%512 != hashSize {
		return refuse("it ends without the sha256 etcd's snapshot save appends (a copy of the live database, server/db/etcd/member/snap/db, is no snapshot), and k3s refuses it")
	}
	if size < dbSize+hashSize {
		return short
	}
	content := size - hashSize
	h := sha256.New()
	var trailer []byte
	if int64(len(head)) > content {
		h.Write(head[:content])
		trailer = head[content:]
	} else {
		h.Write(head)
		if _, err := io.CopyN(h, r, content-int64(len(head))); err != nil {
			return err
		}
	}
	rest := make([]byte, hashSize-len(trailer))
	if _, err := io.ReadFull(r, rest); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), append(trailer, rest...)) {
		return refuse("the sha256 at its end does not match its content: it changed after etcd saved it")
	}
	return nil
}

// boltMeta is what the check needs of a bbolt meta page.
type boltMeta struct {
	pageSize   uint32
	pgid, txid uint64
}

// readMeta reads the meta page at off in head, as bbolt's Validate does.
func readMeta(head []byte, off int) (boltMeta, error) {
	if off+pageHeaderSize+metaSize > len(head) {
		return boltMeta{}, refuse("it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)")
	}
	m := head[off+pageHeaderSize : off+pageHeaderSize+metaSize]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, refuse("it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)")
	}
	if v := le.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, refuse("its bbolt format version is %d, etcd's is %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:checksumAt])
	if h.Sum64() != le.Uint64(m[checksumAt:]) {
		return boltMeta{}, refuse("both bbolt meta pages fail their checksum: the header is damaged")
	}
	return boltMeta{pageSize: le.Uint32(m[8:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, nil
}

// chooseMeta is the meta bbolt would open the database with: of the two
// meta pages (the second one page further; where the first is damaged,
// looked for at each page size, as bbolt does), the valid one with the
// higher transaction; its page size and page count must be a database's.
func chooseMeta(head []byte) (boltMeta, error) {
	m, err := readMeta(head, 0)
	offsets := []int{int(m.pageSize)}
	if err != nil {
		offsets = nil
		for size := minPageSize; size <= maxPageSize; size <<= 1 {
			offsets = append(offsets, size)
		}
	}
	for _, off := range offsets {
		other, err1 := readMeta(head, off)
		if err1 == nil && (err != nil || other.txid > m.txid) {
			m, err = other, nil
			break
		}
	}
	if err != nil {
		return m, err
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return m, refuse("its bbolt page size %d is none etcd writes (a power of two from 1 KiB to 64 KiB)", m.pageSize)
	}
	if m.pgid < minPages {
		return m, refuse("its bbolt header counts %d pages, fewer than the %d of an empty database", m.pgid, minPages)
	}
	return m, nil
}
