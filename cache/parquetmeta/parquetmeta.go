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

// Package parquetmeta checks a Parquet file's framing (the "PAR1" magic at both ends) and reads its
// footer: row count, row groups and their sizes. A sync uses it to refuse to publish a file that is
// not the Parquet it claims to be, and to tell users where their layout will scan slowly.
package parquetmeta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/pqcache/pqcache/cache/manifest"
)

var magic = []byte("PAR1")

// ErrNotParquet marks a file whose framing or footer is not valid Parquet.
var ErrNotParquet = errors.New("not a valid Parquet file")

// IsParquet reports whether a key names a Parquet file by its extension.
func IsParquet(key string) bool { return strings.HasSuffix(strings.ToLower(key), ".parquet") }

// Inspect checks the magic bytes and parses the footer of the Parquet file r of the given size. It
// reads only the head, the tail and the footer (page indexes and bloom filters are skipped), a few
// tens of kilobytes whatever the file's size.
func Inspect(r io.ReaderAt, size int64) (*manifest.ParquetFacts, error) {
	if size < 12 {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrNotParquet, size)
	}
	head, tail := make([]byte, 4), make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	if _, err := r.ReadAt(tail, size-8); err != nil {
		return nil, fmt.Errorf("reading footer length: %w", err)
	}
	if !bytes.Equal(head, magic) || !bytes.Equal(tail[4:], magic) {
		return nil, fmt.Errorf("%w: missing PAR1 magic bytes", ErrNotParquet)
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotParquet, err)
	}
	md := f.Metadata()
	facts := &manifest.ParquetFacts{Rows: md.NumRows, RowGroups: int64(len(md.RowGroups))}
	var sum int64
	for i, rg := range md.RowGroups {
		if i == 0 || rg.NumRows < facts.MinRowsPerGroup {
			facts.MinRowsPerGroup = rg.NumRows
		}
		facts.MaxRowsPerGroup = max(facts.MaxRowsPerGroup, rg.NumRows)
		facts.CompressedBytes += rg.TotalCompressedSize
		sum += rg.NumRows
	}
	if sum != md.NumRows {
		return nil, fmt.Errorf("%w: row groups hold %d rows but the footer says %d", ErrNotParquet, sum, md.NumRows)
	}
	return facts, nil
}

// Layout thresholds, from measurements of scan speed: row groups under 5,000 rows scan 5-10x slower;
// a single group cannot be split across threads; files under 10 MB pay per-file overhead and files
// over 10 GB are hard to parallelise.
const (
	SmallGroupRows = 5_000
	LargeGroupRows = 2_000_000
	SmallFileBytes = 10_000_000
	LargeFileBytes = 10_000_000_000
)

// Summary aggregates the layout of many files and turns it into advice.
type Summary struct {
	ParquetFiles, RowGroups, MinRowsPerGroup, MaxRowsPerGroup int64

	singleGroupFiles, smallGroups, largeGroups, smallFiles, largeFiles int64
}

// Add counts one file.
func (s *Summary) Add(size int64, f *manifest.ParquetFacts) {
	if f == nil {
		return
	}
	if s.ParquetFiles == 0 || f.MinRowsPerGroup < s.MinRowsPerGroup {
		s.MinRowsPerGroup = f.MinRowsPerGroup
	}
	s.MaxRowsPerGroup = max(s.MaxRowsPerGroup, f.MaxRowsPerGroup)
	s.ParquetFiles++
	s.RowGroups += f.RowGroups
	if f.RowGroups == 1 && f.Rows > LargeGroupRows {
		s.singleGroupFiles++
	}
	if f.RowGroups > 0 && f.MinRowsPerGroup < SmallGroupRows && f.Rows >= SmallGroupRows {
		s.smallGroups++
	}
	if f.MaxRowsPerGroup > LargeGroupRows {
		s.largeGroups++
	}
	if size < SmallFileBytes {
		s.smallFiles++
	}
	if size > LargeFileBytes {
		s.largeFiles++
	}
}

// Advice returns one sentence per layout problem found, most costly first.
func (s *Summary) Advice() []string {
	var out []string
	if s.smallGroups > 0 {
		out = append(out, fmt.Sprintf("%d files have row groups under %d rows, which scan 5-10x slower: rewrite with 100k-1M rows per group", s.smallGroups, SmallGroupRows))
	}
	if s.singleGroupFiles > 0 {
		out = append(out, fmt.Sprintf("%d files hold more than %d rows in a single row group, which one thread must scan alone: split into groups of 100k-1M rows", s.singleGroupFiles, LargeGroupRows))
	}
	if s.largeGroups > 0 {
		out = append(out, fmt.Sprintf("%d files have row groups over %d rows, which need much memory to decode: aim for 100k-1M rows per group", s.largeGroups, LargeGroupRows))
	}
	if s.smallFiles > 0 && s.smallFiles*2 > s.ParquetFiles {
		out = append(out, fmt.Sprintf("%d of %d files are under 10 MB: per-file overhead dominates; compact into files of 100 MB-10 GB", s.smallFiles, s.ParquetFiles))
	}
	if s.largeFiles > 0 {
		out = append(out, fmt.Sprintf("%d files are over 10 GB: split them so that refreshes and scans parallelise", s.largeFiles))
	}
	return out
}
