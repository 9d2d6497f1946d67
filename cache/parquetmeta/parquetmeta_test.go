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

package parquetmeta

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/pqcache/pqcache/cache/manifest"
)

func TestInspectReadsTheFooter(t *testing.T) {
	type row struct {
		ID int64 `parquet:"id"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.MaxRowsPerRowGroup(400))
	rows := make([]row, 1000)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	facts, err := Inspect(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := manifest.ParquetFacts{Rows: 1000, RowGroups: 3, MinRowsPerGroup: 200, MaxRowsPerGroup: 400, CompressedBytes: facts.CompressedBytes}
	if *facts != want || facts.CompressedBytes <= 0 {
		t.Fatalf("facts %+v, want %+v", *facts, want)
	}

	for name, bad := range map[string][]byte{
		"too short":         []byte("PAR1PAR1"),
		"no magic":          append([]byte("CSV!"), data[4:]...),
		"truncated":         data[:len(data)/2],
		"footer length lie": append(append([]byte{}, data[:len(data)-8]...), 0xff, 0xff, 0xff, 0x0f, 'P', 'A', 'R', '1'),
	} {
		if _, err := Inspect(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrNotParquet) {
			t.Errorf("%s: got %v, want ErrNotParquet", name, err)
		}
	}
}

func TestAdvice(t *testing.T) {
	var s Summary
	s.Add(200_000_000, &manifest.ParquetFacts{Rows: 1_000_000, RowGroups: 10, MinRowsPerGroup: 100_000, MaxRowsPerGroup: 100_000})
	if adv := s.Advice(); len(adv) != 0 {
		t.Fatalf("a good layout got advice: %v", adv)
	}
	s.Add(1_000_000, &manifest.ParquetFacts{Rows: 50_000, RowGroups: 50, MinRowsPerGroup: 1_000, MaxRowsPerGroup: 1_000})
	s.Add(1_000_000, &manifest.ParquetFacts{Rows: 3_000_000, RowGroups: 1, MinRowsPerGroup: 3_000_000, MaxRowsPerGroup: 3_000_000})
	s.Add(20_000_000_000, &manifest.ParquetFacts{Rows: 1_000_000, RowGroups: 10, MinRowsPerGroup: 100_000, MaxRowsPerGroup: 100_000})
	s.Add(5_000_000, &manifest.ParquetFacts{Rows: 100_000, RowGroups: 1, MinRowsPerGroup: 100_000, MaxRowsPerGroup: 100_000})
	adv := strings.Join(s.Advice(), "\n")
	for _, want := range []string{"under 5000 rows", "single row group", "over 2000000 rows", "3 of 5 files are under 10 MB", "over 10 GB"} {
		if !strings.Contains(adv, want) {
			t.Errorf("advice lacks %q:\n%s", want, adv)
		}
	}
	if s.ParquetFiles != 5 || s.MinRowsPerGroup != 1_000 || s.MaxRowsPerGroup != 3_000_000 || s.RowGroups != 72 {
		t.Errorf("summary %+v", s)
	}
}
