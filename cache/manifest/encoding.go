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

package manifest

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Entries are stored in a compact binary form (a million entries: ~100 MB instead of ~300 MB of
// JSON, and decoded ten times faster, which an unchanged sync does for every entry). The key is the
// bbolt key and is not repeated. Values written by earlier versions are JSON, which starts with '{':
// both are read.
//
//	version byte (1), flags byte, then: size, LastModified seconds and nanoseconds (varints); ETag;
//	SHA256; Verified (length-prefixed); PieceSize (varint); PieceSizes (count, varints); Parquet
//	facts (5 varints); Checksum (length-prefixed, versions 2 and 3); Parts (count, varints, version 3
//	only). An ETag or SHA256 that is hex
//	(optionally quoted, optionally "-N") is stored as raw bytes and N, anything else as a
//	length-prefixed string.
//
// An entry with a Checksum is written as version 2, which is what says the Checksum follows, and one
// with Parts as version 3 (a Checksum, perhaps empty, then the Parts): an older pqcache fails on them
// with a version error rather than misreading them. Every other entry stays version 1.
const (
	entryVersion         = 1
	entryVersionChecksum = 2
	entryVersionParts    = 3
)

const (
	flagETagHex = 1 << iota
	flagETagQuoted
	flagSHAHex
	flagParquet
	flagPieceSizes
)

func encodeEntry(e Entry) []byte {
	b := make([]byte, 2, 96)
	b[0] = entryVersion
	var flags byte
	b = binary.AppendUvarint(b, uint64(e.Size))
	b = binary.AppendVarint(b, e.LastModified.Unix())
	b = binary.AppendUvarint(b, uint64(e.LastModified.Nanosecond()))
	etag, quoted := strings.CutPrefix(e.ETag, `"`)
	if quoted {
		etag, quoted = strings.CutSuffix(etag, `"`)
	}
	if raw, n, ok := hexWithCount(etag); ok && (quoted || etag == e.ETag) {
		flags |= flagETagHex
		if quoted {
			flags |= flagETagQuoted
		}
		b = appendHex(b, raw, n)
	} else {
		b = appendString(b, e.ETag)
	}
	if raw, n, ok := hexWithCount(e.SHA256); ok {
		flags |= flagSHAHex
		b = appendHex(b, raw, n)
	} else {
		b = appendString(b, e.SHA256)
	}
	b = appendString(b, e.Verified)
	b = binary.AppendUvarint(b, uint64(e.PieceSize))
	if len(e.PieceSizes) > 0 {
		flags |= flagPieceSizes
		b = binary.AppendUvarint(b, uint64(len(e.PieceSizes)))
		for _, n := range e.PieceSizes {
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	if p := e.Parquet; p != nil {
		flags |= flagParquet
		for _, v := range []int64{p.Rows, p.RowGroups, p.MinRowsPerGroup, p.MaxRowsPerGroup, p.CompressedBytes} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	switch {
	case len(e.Parts) > 0:
		b[0] = entryVersionParts
		b = appendString(b, e.Checksum)
		b = binary.AppendUvarint(b, uint64(len(e.Parts)))
		for _, n := range e.Parts {
			b = binary.AppendUvarint(b, uint64(n))
		}
	case e.Checksum != "":
		b[0] = entryVersionChecksum
		b = appendString(b, e.Checksum)
	}
	b[1] = flags
	return b
}

// hexWithCount splits "<even-length hex>[-N]" into its bytes and N (0 when absent).
func hexWithCount(s string) ([]byte, uint64, bool) {
	h, count, hasCount := strings.Cut(s, "-")
	if h == "" || len(h)%2 != 0 || strings.ToLower(h) != h {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return nil, 0, false
	}
	var n uint64
	if hasCount {
		if n, err = strconv.ParseUint(count, 10, 32); err != nil || n == 0 || strconv.FormatUint(n, 10) != count {
			return nil, 0, false
		}
	}
	return raw, n, true
}

func appendHex(b, raw []byte, n uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(raw)))
	b = append(b, raw...)
	return binary.AppendUvarint(b, n)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errEntry = errors.New("corrupt manifest entry")

// decodeEntry reads a stored value of key, binary or JSON.
func decodeEntry(key, v []byte) (Entry, error) {
	var e Entry
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &e)
		return e, err
	}
	if len(v) < 2 || v[0] < entryVersion || v[0] > entryVersionParts {
		return e, fmt.Errorf("%w %s: version %v", errEntry, key, v[:min(len(v), 1)])
	}
	d := decoder{b: v[2:]}
	flags := v[1]
	e.Key = string(key)
	e.Size = int64(d.uvarint())
	sec := d.varint()
	e.LastModified = time.Unix(sec, int64(d.uvarint())).UTC()
	if flags&flagETagHex != 0 {
		e.ETag = d.hex()
		if flags&flagETagQuoted != 0 {
			e.ETag = `"` + e.ETag + `"`
		}
	} else {
		e.ETag = d.string()
	}
	if flags&flagSHAHex != 0 {
		e.SHA256 = d.hex()
	} else {
		e.SHA256 = d.string()
	}
	e.Verified = d.string()
	e.PieceSize = int64(d.uvarint())
	if flags&flagPieceSizes != 0 {
		e.PieceSizes = d.sizes()
	}
	if flags&flagParquet != 0 {
		e.Parquet = &ParquetFacts{Rows: int64(d.uvarint()), RowGroups: int64(d.uvarint()), MinRowsPerGroup: int64(d.uvarint()),
			MaxRowsPerGroup: int64(d.uvarint()), CompressedBytes: int64(d.uvarint())}
	}
	if v[0] >= entryVersionChecksum {
		e.Checksum = d.string()
	}
	if v[0] == entryVersionParts {
		e.Parts = d.sizes()
	}
	if d.bad || len(d.b) != 0 {
		return e, fmt.Errorf("%w %s", errEntry, key)
	}
	return e, nil
}

type decoder struct {
	b   []byte
	bad bool
}

// sizes reads a count and that many varints; a count longer than what is left marks the entry bad.
func (d *decoder) sizes() []int64 {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(d.uvarint())
	}
	return out
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) hex() string {
	s := hex.EncodeToString(d.bytes())
	if n := d.uvarint(); n > 0 {
		s += "-" + strconv.FormatUint(n, 10)
	}
	return s
}
