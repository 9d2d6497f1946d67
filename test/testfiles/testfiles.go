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

// Package testfiles makes the files tests put in buckets: real Parquet written by parquet-go, and
// random bytes, each set by a seed so that a test can write the same file again, or another one.
package testfiles

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Row is the schema of the Parquet files Parquet writes.
type Row struct {
	ID    int64   `parquet:"id"`
	Name  string  `parquet:"name"`
	Value float64 `parquet:"value"`
}

// Parquet returns a Parquet file of rows rows in groups of groupRows, its content set by seed.
func Parquet(t testing.TB, rows, groupRows int, seed uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Row](&buf, parquet.MaxRowsPerRowGroup(int64(groupRows)))
	rng := rand.New(rand.NewPCG(seed, seed))
	batch := make([]Row, 0, 1024)
	for i := range rows {
		batch = append(batch, Row{ID: int64(i), Name: fmt.Sprintf("name-%d-%d", seed, rng.IntN(1000)), Value: rng.Float64()})
		if len(batch) == cap(batch) {
			if _, err := w.Write(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Random returns n bytes set by seed.
func Random(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}
