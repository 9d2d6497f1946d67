/*
Copyright 2026 The pqcache Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command s3gen writes objects straight into a versitygw posix root, as versitygw would store them
// after a PUT: the bytes in the file, the ETag (MD5) and a full-object CRC64NVME in extended
// attributes. Uploading a million objects through the API takes far longer than the benchmark it
// feeds; files dropped in without attributes would have no ETag (unless versitygw runs with
// --default-etag, which gives every object the same one) and no checksum. The bucket must exist
// (created through the API, which writes the bucket's own attributes).
//
//	s3gen -root DIR -bucket B -prefix P -n 1000000 -size 1024          # d0000/o0000000.bin ...
//	s3gen -root DIR -bucket B -prefix P -n 1000000 -size 1024 -change 100  # rewrite every 100th
//	s3gen -root DIR -bucket B -prefix P -n 1 -size 8589934592          # one 8 GiB object
package main

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pqcache/pqcache/cache/integrity"
)

func main() {
	root := flag.String("root", "", "versitygw posix root")
	bucket := flag.String("bucket", "bench", "bucket (must exist)")
	prefix := flag.String("prefix", "", "key prefix")
	n := flag.Int("n", 1000, "objects")
	size := flag.Int64("size", 1024, "bytes per object")
	perDir := flag.Int("per-dir", 1000, "objects per directory")
	change := flag.Int("change", 0, "rewrite only every CHANGE-th object, with new content (0: write all)")
	workers := flag.Int("workers", 2, "objects written at once")
	flag.Parse()
	if *root == "" {
		log.Fatal("-root is required")
	}
	seed := uint64(1)
	if *change > 0 {
		seed = uint64(time.Now().UnixNano())
	}
	var next, written atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range *workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= *n {
					return
				}
				if *change > 0 && i%*change != 0 {
					continue
				}
				key := fmt.Sprintf("%sd%04d/o%07d.bin", *prefix, i / *perDir, i)
				if err := write(filepath.Join(*root, *bucket, key), *size, seed+uint64(i)); err != nil {
					log.Fatal(err)
				}
				if w := written.Add(1); w%100_000 == 0 {
					log.Printf("%d objects written in %s", w, time.Since(start).Round(time.Second))
				}
			}
		})
	}
	wg.Wait()
	log.Printf("%d objects of %d bytes written in %s", written.Load(), *size, time.Since(start).Round(time.Millisecond))
}

// write creates path with size pseudo-random bytes set by seed, and versitygw's attributes for it.
func write(path string, size int64, seed uint64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// For the error paths; the success path closes it below and returns Close's error.
	defer func() { _ = f.Close() }()
	md, crc := md5.New(), integrity.NewCRC64NVME()
	w := io.MultiWriter(f, md, crc)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, min(size, 4<<20))
	for left := size; left > 0; {
		chunk := buf[:min(int64(len(buf)), left)]
		for i := 0; i < len(chunk); i += 8 {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], rng.Uint64())
			copy(chunk[i:], b[:])
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		left -= int64(len(chunk))
	}
	etag := `"` + hex.EncodeToString(md.Sum(nil)) + `"`
	sums := fmt.Sprintf(`{"Algorithm":"CRC64NVME","Type":"FULL_OBJECT","CRC32":null,"CRC32C":null,"SHA1":null,"SHA256":null,"CRC64NVME":%q,"SHA512":null,"MD5":null,"XXHASH64":null,"XXHASH3":null,"XXHASH128":null}`,
		base64.StdEncoding.EncodeToString(crc.Sum(nil)))
	if err := unix.Fsetxattr(int(f.Fd()), "user.etag", []byte(etag), 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := unix.Fsetxattr(int(f.Fd()), "user.checksums", []byte(sums), 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
