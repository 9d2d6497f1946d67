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

package duckdb

import (
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// TestS3SecretRegion: the region comes from the Dataset, else the environment, else us-east-1, never
// empty (DuckDB signs with an empty region, which S3-compatible stores reject); the endpoint's scheme
// decides TLS.
func TestS3SecretRegion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		access wire.S3Access
		env    map[string]string
		want   []string
	}{
		{"nothing set", wire.S3Access{Endpoint: "http://gw.ns.svc:7070", PathStyle: true}, nil,
			[]string{"REGION 'us-east-1'", "ENDPOINT 'gw.ns.svc:7070'", "USE_SSL false", "URL_STYLE 'path'"}},
		{"environment", wire.S3Access{}, map[string]string{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "ap-south-1"},
			[]string{"REGION 'eu-west-1'"}},
		{"legacy variable", wire.S3Access{}, map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, []string{"REGION 'ap-south-1'"}},
		{"dataset first", wire.S3Access{Region: "us-west-2", Endpoint: "https://s3.example"}, map[string]string{"AWS_REGION": "eu-west-1"},
			[]string{"REGION 'us-west-2'", "USE_SSL true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s3Secret(&tc.access, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s\nlacks %s", got, w)
				}
			}
		})
	}
}
