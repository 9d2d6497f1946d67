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

package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// TerminationMessageLimit is the size Kubernetes keeps of a container's termination message.
const TerminationMessageLimit = 4096

// summaryPrefix marks an encoded summary, so a reader can tell it from plain text.
const summaryPrefix = "pqcache-bench-v1:"

// EncodeSummary packs a result for a termination message: per-iteration times and stderr tails are
// dropped (the per-query summary is kept), the JSON is gzipped and base64-encoded, and must fit in
// limit bytes; 22 queries take about 1.5 KB.
func EncodeSummary(res *Result, limit int) ([]byte, error) {
	c := *res
	c.Queries = make([]QueryResult, len(res.Queries))
	for i, q := range res.Queries {
		q.Millis = nil
		if len(q.StderrTail) > 160 {
			q.StderrTail = q.StderrTail[len(q.StderrTail)-160:]
		}
		c.Queries[i] = q
	}
	for {
		data, err := json.Marshal(&c)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		out := []byte(summaryPrefix + base64.StdEncoding.EncodeToString(buf.Bytes()))
		if len(out) <= limit {
			return out, nil
		}
		trimmed := false
		for i := range c.Queries {
			if c.Queries[i].StderrTail != "" {
				c.Queries[i].StderrTail, trimmed = "", true
			}
		}
		if !trimmed {
			return nil, fmt.Errorf("the summary of %d queries takes %d bytes, more than %d", len(c.Queries), len(out), limit)
		}
	}
}

// DecodeSummary reads what EncodeSummary wrote.
func DecodeSummary(s string) (*Result, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), summaryPrefix)
	if !ok {
		return nil, fmt.Errorf("not a pqcache bench summary")
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decoding the bench summary: %w", err)
	}
	return &res, nil
}
