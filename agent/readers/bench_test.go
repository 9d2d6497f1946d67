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

package readers

import (
	"crypto/tls"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// benchObject is the size of the object the benchmarks read: a Parquet file of a large table.
const benchObject = 64 << 20

// BenchmarkRead compares reading one 64 MiB object of a copy through the endpoint (the AWS SDK,
// whole-object GETs, over plain HTTP and over TLS 1.3 as pods read it) with reading the same file
// from the directory (the CSI driver's path): the floor. Run with
// `go test -run '^$' -bench BenchmarkRead -benchtime 20x ./agent/readers`.
func BenchmarkRead(b *testing.B) {
	f := newFixture(b)
	data := strings.Repeat("0123456789abcdef", benchObject/16)
	publish(b, f.sales, 2, map[string]string{"big.parquet": data}, 2)
	file := filepath.Join(f.sales, ".pqcache", "generations", "2", "big.parquet")
	b.Run("directory", func(b *testing.B) {
		b.SetBytes(benchObject)
		for b.Loop() {
			fh, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, fh); err != nil {
				b.Fatal(err)
			}
			_ = fh.Close()
		}
	})
	b.Run("endpoint-http", func(b *testing.B) { benchGet(b, f.client("team-a", "pqcache-pin/v1;s=bench")) })
	b.Run("endpoint-tls", func(b *testing.B) {
		ts := httptest.NewUnstartedServer(f.srv)
		ts.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
		ts.StartTLS()
		defer ts.Close()
		tlsFixture := *f
		tlsFixture.url = ts.URL
		c := tlsFixture.client("team-a", "pqcache-pin/v1;s=bench")
		c = s3.New(c.Options(), func(o *s3.Options) { o.HTTPClient = ts.Client() })
		benchGet(b, c)
	})
}

func benchGet(b *testing.B, c *s3.Client) {
	b.SetBytes(benchObject)
	for b.Loop() {
		out, err := c.GetObject(b.Context(), &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String("sales/big.parquet")})
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, out.Body); err != nil || n != benchObject {
			b.Fatalf("%d bytes, %v", n, err)
		}
		_ = out.Body.Close()
	}
}
