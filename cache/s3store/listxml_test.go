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

package s3store

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

const listHead = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>`

// TestScanListAgreesWithEncodingXML: the fast scanner reads what encoding/xml reads, or declines.
func TestScanListAgreesWithEncodingXML(t *testing.T) {
	cases := []struct {
		name, doc string
		scans     bool
	}{
		{"S3's shape", listHead + `<IsTruncated>true</IsTruncated><Contents><Key>p/a &amp; b &lt;c&gt; &#x41;&#66;.bin</Key><LastModified>2026-12-02T19:27:26.123Z</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef-3&quot;</ETag><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><Size>1024</Size><Owner><ID>x</ID><DisplayName>y</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>p/ lead space</Key><LastModified>2026-12-02T19:27:26Z</LastModified><ETag>"e"</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents><NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>`, true},
		{"pretty-printed, two algorithms, empty element", listHead + "\n  <IsTruncated>false</IsTruncated>\n  <Contents>\n    <Key>p/x</Key>\n    <ChecksumAlgorithm>CRC32</ChecksumAlgorithm>\n    <ChecksumAlgorithm>SHA256</ChecksumAlgorithm>\n    <ChecksumType/>\n    <LastModified>2026-01-01T00:00:00.000Z</LastModified>\n    <Size>7</Size>\n  </Contents>\n</ListBucketResult>", true},
		{"common prefixes", listHead + `<Contents><Key>p/k</Key><Size>1</Size><LastModified>2026-01-01T00:00:00Z</LastModified></Contents><CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated></ListBucketResult>`, true},
		{"namespace prefixes", `<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Contents><s3:Key>p/k</s3:Key><s3:Size>1</s3:Size></s3:Contents></s3:ListBucketResult>`, false},
		{"CDATA", listHead + `<Contents><Key><![CDATA[p/k]]></Key><Size>1</Size></Contents></ListBucketResult>`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := decodeList([]byte(tc.doc), "p/")
			if err != nil {
				t.Fatal(err)
			}
			got, ok := scanList([]byte(tc.doc), "p/")
			if ok != tc.scans {
				t.Fatalf("scanned: %v, want %v", ok, tc.scans)
			}
			if ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("scan:\n%+v\nencoding/xml:\n%+v", got, want)
			}
			if p, err := parseList([]byte(tc.doc), "p/"); err != nil || !reflect.DeepEqual(p, want) {
				t.Fatalf("parseList: %+v %v", p, err)
			}
		})
	}
}

// TestScannerHandsOverMidway: the scanner reads the plain entries, encoding/xml the rest of the same
// stream from the first element the scanner declines; a comment's element is not an object.
func TestScannerHandsOverMidway(t *testing.T) {
	doc := listHead + `<Contents><Key>p/a</Key><Size>1</Size></Contents><!-- <Contents><Key>p/not</Key></Contents> -->` +
		`<Contents><Key><![CDATA[p/b]]></Key><Size>2</Size></Contents><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>`
	p, err := readList(strings.NewReader(doc), "p/")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d %s %d %s %v %s", len(p.objects), p.objects[0].Key, p.objects[0].Size, p.objects[1].Key, p.truncated, p.next); got != "2 a 1 b true t" {
		t.Errorf("page %+v", p)
	}
}

func BenchmarkParseList(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(listHead + `<IsTruncated>true</IsTruncated>`)
	for i := range 1000 {
		fmt.Fprintf(&sb, `<Contents><Key>p/d0001/o%07d.bin</Key><LastModified>2026-12-02T19:27:26.123Z</LastModified><ETag>&quot;e6186945d3dc47bd0cf9fc3b0e990cea&quot;</ETag><Size>1024</Size><StorageClass>STANDARD</StorageClass><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType></Contents>`, i)
	}
	sb.WriteString(`<NextContinuationToken>abc</NextContinuationToken></ListBucketResult>`)
	doc := []byte(sb.String())
	for _, impl := range []struct {
		name string
		fn   func([]byte, string) (listPage, error)
	}{{"scan", parseList}, {"encoding-xml", decodeList}, {"stream", func(d []byte, strip string) (listPage, error) {
		return readList(struct{ io.Reader }{bytes.NewReader(d)}, strip) // a plain reader, as a response body is
	}}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				if p, err := impl.fn(doc, "p/"); err != nil || len(p.objects) != 1000 {
					b.Fatal(err)
				}
			}
		})
	}
}
