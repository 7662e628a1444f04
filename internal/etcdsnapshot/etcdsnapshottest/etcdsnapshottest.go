// Package etcdsnapshottest makes files shaped like k3s's etcd snapshots,
// for the tests of what reads them.
package etcdsnapshottest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash/fnv"
)

// BoltDB is a database as bbolt lays it out (internal/common/page.go and
// meta.go): meta pages 0 and 1 (a page header, then magic, version, page
// size, flags, the root bucket, freelist, high-water mark, txid and the
// FNV-64a of those), the freelist on page 2, the root bucket's leaf on page
// 3, and pages of content up to the high-water mark. Little-endian, as on
// every CPU the collection serves.
func BoltDB(pageSize, pages int, tweak func(meta []byte)) []byte {
	db := make([]byte, pageSize*pages)
	for id := range 2 {
		p := db[id*pageSize:]
		binary.LittleEndian.PutUint64(p[0:], uint64(id))
		binary.LittleEndian.PutUint16(p[8:], 0x04) // meta page
		m := p[16 : 16+64]
		binary.LittleEndian.PutUint32(m[0:], 0xED0CDAED)
		binary.LittleEndian.PutUint32(m[4:], 2)
		binary.LittleEndian.PutUint32(m[8:], uint32(pageSize))
		binary.LittleEndian.PutUint64(m[16:], 3) // root bucket's page
		binary.LittleEndian.PutUint64(m[32:], 2) // freelist's page
		binary.LittleEndian.PutUint64(m[40:], uint64(pages))
		binary.LittleEndian.PutUint64(m[48:], uint64(id+1))
		if tweak != nil {
			tweak(m)
		}
		h := fnv.New64a()
		h.Write(m[:56])
		binary.LittleEndian.PutUint64(m[56:], h.Sum64())
	}
	binary.LittleEndian.PutUint16(db[2*pageSize+8:], 0x10) // freelist
	binary.LittleEndian.PutUint16(db[3*pageSize+8:], 0x02) // leaf
	for i := 4 * pageSize; i < len(db); i++ {
		db[i] = byte(i)
	}
	return db
}

// Snapshot is what etcd's snapshot save writes: the database, then its sha256.
func Snapshot(db []byte) []byte {
	sum := sha256.Sum256(db)
	return append(bytes.Clone(db), sum[:]...)
}
