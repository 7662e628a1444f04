package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// A stand-in snapshot is a file of the format k3s's is, so that what reads
// snapshots (module k3s_etcd_restore's check) sees one: etcd's snapshot
// save writes the bbolt database, then its sha256 (client/v3/snapshot
// SaveWithVersion: "sha256 checksum not found" otherwise). The database
// here is bbolt's smallest (meta pages 0 and 1, the freelist on page 2, an
// empty root bucket's leaf on page 3: bbolt's internal/common/page.go and
// meta.go), with the stand-in's record (snapshotDoc's JSON) on the pages
// after them, up to the meta's high-water mark: not etcd's keyspace.
const boltPageSize = 4096

// boltSnapshot is payload kept as such a snapshot.
func boltSnapshot(payload []byte) []byte {
	pages := 4 + (len(payload)+boltPageSize-1)/boltPageSize
	db := make([]byte, pages*boltPageSize)
	le := binary.LittleEndian
	for id := range 2 {
		p := db[id*boltPageSize:]
		le.PutUint64(p[0:], uint64(id))
		le.PutUint16(p[8:], 0x04) // meta page
		m := p[16 : 16+64]
		le.PutUint32(m[0:], 0xED0CDAED)
		le.PutUint32(m[4:], 2)
		le.PutUint32(m[8:], boltPageSize)
		le.PutUint64(m[16:], 3) // the root bucket's page
		le.PutUint64(m[32:], 2) // the freelist's page
		le.PutUint64(m[40:], uint64(pages))
		le.PutUint64(m[48:], uint64(id))
		h := fnv.New64a()
		h.Write(m[:56])
		le.PutUint64(m[56:], h.Sum64())
	}
	le.PutUint64(db[2*boltPageSize:], 2)
	le.PutUint16(db[2*boltPageSize+8:], 0x10) // freelist, empty
	le.PutUint64(db[3*boltPageSize:], 3)
	le.PutUint16(db[3*boltPageSize+8:], 0x02) // leaf, empty
	copy(db[4*boltPageSize:], payload)
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

// restoredPayload is what etcd's restore reads of a snapshot (etcdutl
// snapshot's saveDB: the sha256 found by the file's size, checked, then
// the database opened with bbolt), then the stand-in's record in it.
func restoredPayload(raw []byte) ([]byte, error) {
	if len(raw)%512 != sha256.Size {
		return nil, errors.New("snapshot missing hash but --skip-hash-check=false")
	}
	db, want := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if got := sha256.Sum256(db); !bytes.Equal(got[:], want) {
		return nil, fmt.Errorf("expected sha256 %v, got %v", want, got[:])
	}
	if len(db) < 4*boltPageSize || binary.LittleEndian.Uint32(db[16:]) != 0xED0CDAED {
		return nil, errors.New("invalid database") // bbolt's ErrInvalid
	}
	return bytes.TrimRight(db[4*boltPageSize:], "\x00"), nil
}
