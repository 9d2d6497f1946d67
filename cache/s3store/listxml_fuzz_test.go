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
	"encoding/xml"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

// FuzzParseList feeds parseList (readList over the whole document) what a bucket's endpoint can
// answer a ListObjectsV2 with. Seeds are
// the documents of TestScanListAgreesWithEncodingXML (S3's shape, as the S3 documentation's
// examples write it, pretty-printed, with namespace prefixes, with CDATA), a page in the form
// versitygw writes (quotes as &#34;, nanoseconds), and a hostile page (a key outside the prefix, a
// negative size), and pages that the scanner hands over to encoding/xml midway (CDATA, a comment, a
// namespace prefix, a DOCTYPE).
//
// Properties: the same page or error whether the body arrives whole or one byte a read; parseList
// returns a page or an error, never both; and the page it returns, written
// again as S3 writes a listing, reads back the same (by the fast scanner, which must accept S3's own
// shape), so that no key, size, time, ETag or checksum changes between what the store said and what
// the sync uses.
func FuzzParseList(f *testing.F) {
	for _, doc := range []string{
		listHead + `<IsTruncated>true</IsTruncated><Contents><Key>p/a &amp; b &lt;c&gt; &#x41;&#66;.bin</Key><LastModified>2026-12-02T19:27:26.123Z</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef-3&quot;</ETag><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><Size>1024</Size><Owner><ID>x</ID><DisplayName>y</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents><Contents><Key>p/ lead space</Key><LastModified>2026-12-02T19:27:26Z</LastModified><ETag>"e"</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents><NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>`,
		listHead + "\n  <IsTruncated>false</IsTruncated>\n  <Contents>\n    <Key>p/x</Key>\n    <ChecksumAlgorithm>CRC32</ChecksumAlgorithm>\n    <ChecksumAlgorithm>SHA256</ChecksumAlgorithm>\n    <ChecksumType/>\n    <LastModified>2026-01-01T00:00:00.000Z</LastModified>\n    <Size>7</Size>\n  </Contents>\n</ListBucketResult>",
		listHead + `<Contents><Key>p/k</Key><Size>1</Size><LastModified>2026-01-01T00:00:00Z</LastModified></Contents><CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated></ListBucketResult>`,
		`<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Contents><s3:Key>p/k</s3:Key><s3:Size>1</s3:Size></s3:Contents></s3:ListBucketResult>`,
		listHead + `<Contents><Key><![CDATA[p/k]]></Key><Size>1</Size></Contents></ListBucketResult>`,
		// ListObjectsV2 of prefix p/ with max-keys=1 in the form versitygw (Go's encoding/xml) writes.
		`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>lake</Name><Prefix>p/</Prefix><MaxKeys>1</MaxKeys><IsTruncated>true</IsTruncated><Contents><Key>p/a b+c%é.parquet</Key><LastModified>2026-12-02T18:20:01.123456789Z</LastModified><ETag>&#34;b1946ac92492d2347c6235b4d2611184&#34;</ETag><Size>6</Size><StorageClass>STANDARD</StorageClass><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType></Contents><KeyCount>1</KeyCount><NextContinuationToken>p/a b+c%é.parquet</NextContinuationToken></ListBucketResult>`,
		listHead + `<Contents><Key>other/k</Key><Size>-5</Size></Contents><IsTruncated>true</IsTruncated></ListBucketResult>`,
		// The scanner reads the first entry, and encoding/xml the rest from the same stream: CDATA,
		// a comment that holds an element, a namespace prefix midway.
		listHead + `<Contents><Key>p/a</Key><Size>1</Size></Contents><Contents><Key><![CDATA[p/b]]></Key><Size>2</Size></Contents><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>`,
		listHead + `<Contents><Key>p/a</Key><Size>1</Size></Contents><!-- <Contents><Key>p/not</Key></Contents> --><Contents><Key>p/b</Key><Size>2</Size></Contents></ListBucketResult>`,
		listHead + `<Contents><Key>p/a</Key><Size>1</Size></Contents><s3:Contents><s3:Key>p/b</s3:Key></s3:Contents><IsTruncated>false</IsTruncated></ListBucketResult>trailing`,
		`<!DOCTYPE x><ListBucketResult><Contents><Key>p/a</Key><Size>1</Size></Contents></ListBucketResult>`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := parseList(doc, "p/")
		// The page does not depend on how the body arrives: one byte per read crosses every buffer
		// boundary of the scanner and of the hand-over to encoding/xml.
		q, qerr := readList(iotest.OneByteReader(bytes.NewReader(doc)), "p/")
		if (err == nil) != (qerr == nil) || !reflect.DeepEqual(p, q) {
			t.Fatalf("whole: %+v %v\none byte a read: %+v %v", p, err, q, qerr)
		}
		if err != nil {
			if !reflect.DeepEqual(p, listPage{}) {
				t.Fatalf("an error (%v) and a page %+v", err, p)
			}
			return
		}
		if !writable(p) {
			return
		}
		again := s3Document(p, "p/")
		q, ok := scanList([]byte(again), "p/")
		if !ok {
			t.Fatalf("the scanner declines S3's own shape: %s", again)
		}
		if !reflect.DeepEqual(q, p) {
			t.Fatalf("read %+v\nwritten as %s\nread back %+v", p, again, q)
		}
	})
}

// writable says whether XML can carry the page's text as it is: valid UTF-8 of characters XML
// allows (a page read from such bytes is the store's error, refused elsewhere).
func writable(p listPage) bool {
	texts := []string{p.next}
	for _, o := range p.objects {
		texts = append(texts, o.Key, o.ETag, o.ChecksumAlgorithm, o.ChecksumType)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
			return r < 0x20 && r != '\t' && r != '\n' || r == '\r' || r >= 0xfffe && r <= 0xffff || r >= 0xd800 && r <= 0xdfff
		}) {
			return false
		}
	}
	return true
}

// s3Document writes a page as S3 writes a ListObjectsV2 answer.
func s3Document(p listPage, prefix string) string {
	esc := func(s string) string {
		var sb strings.Builder
		_ = xml.EscapeText(&sb, []byte(s))
		return sb.String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s<IsTruncated>%t</IsTruncated>", listHead, p.truncated)
	for _, o := range p.objects {
		fmt.Fprintf(&sb, "<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag><Size>%d</Size>",
			esc(prefix+o.Key), o.LastModified.Format(time.RFC3339Nano), esc(o.ETag), o.Size)
		if o.ChecksumAlgorithm != "" {
			fmt.Fprintf(&sb, "<ChecksumAlgorithm>%s</ChecksumAlgorithm>", esc(o.ChecksumAlgorithm))
		}
		fmt.Fprintf(&sb, "<ChecksumType>%s</ChecksumType><StorageClass>STANDARD</StorageClass></Contents>", esc(o.ChecksumType))
	}
	fmt.Fprintf(&sb, "<NextContinuationToken>%s</NextContinuationToken></ListBucketResult>", esc(p.next))
	return sb.String()
}
