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

package cli

import (
	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
)

// registerS3Endpoint adds --endpoint, --region and --path-style for s3:// data to cmd, filling s;
// scope says which uses of the command they are for. Credentials come from the environment
// (AWS_ACCESS_KEY_ID, ..., AWS_CA_BUNDLE), for the probe as for the Polars engine.
func registerS3Endpoint(cmd *cobra.Command, s *wire.S3Access, scope string) {
	f := cmd.Flags()
	f.StringVar(&s.Endpoint, "endpoint", "", scope+": URL of an S3-compatible store (default: AWS S3, or $AWS_ENDPOINT_URL).")
	f.StringVar(&s.Region, "region", "", scope+": the bucket's region (default: $AWS_REGION).")
	f.BoolVar(&s.PathStyle, "path-style", false, scope+": address buckets as endpoint/bucket (most S3-compatible stores need it).")
}
