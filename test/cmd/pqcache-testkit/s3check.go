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

package main

// `pqcache-testkit s3-check` reads a bucket as any S3 reader would, configured only by the standard
// AWS environment (AWS_ENDPOINT_URL, the keys, AWS_SESSION_TOKEN, AWS_CA_BUNDLE): what a pod that
// reads a Dataset through its node's S3 endpoint gets. It lists a prefix and GETs keys, and reports
// each outcome (the keys listed, each object's size and SHA-256, or the S3 error code and message)
// as JSON, so that a test compares them with what the bucket holds.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"
)

// S3CheckReport is what s3-check found.
type S3CheckReport struct {
	Listed    []string          `json:"listed,omitempty"`
	ListError string            `json:"listError,omitempty"`
	Objects   map[string]string `json:"objects"` // key: "sha256:<hex> <size>", or "error: CODE: message"
}

func newS3CheckCommand() *cobra.Command {
	var (
		bucket, prefix, reportFile string
		keys                       []string
	)
	cmd := &cobra.Command{
		Use:   "s3-check --bucket B [--prefix P] [--key K...]",
		Short: "List and GET from a bucket as an S3 reader configured by the AWS environment, and report what came back",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return err
			}
			client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
			rep := S3CheckReport{Objects: map[string]string{}}
			out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
			if err != nil {
				rep.ListError = apiError(err)
			} else {
				for _, o := range out.Contents {
					rep.Listed = append(rep.Listed, aws.ToString(o.Key))
				}
			}
			for _, k := range keys {
				rep.Objects[k] = getObject(cmd, client, bucket, k)
			}
			b, _ := json.Marshal(rep)
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			if reportFile != "" {
				return os.WriteFile(reportFile, b, 0o644)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&bucket, "bucket", "", "The bucket.")
	fl.StringVar(&prefix, "prefix", "", "The prefix to list.")
	fl.StringArrayVar(&keys, "key", nil, "A key to GET (repeatable).")
	fl.StringVar(&reportFile, "report-file", "", "Also write the report here (a pod's /dev/termination-log).")
	return cmd
}

// getObject GETs a key and describes what came back.
func getObject(cmd *cobra.Command, client *s3.Client, bucket, key string) string {
	out, err := client.GetObject(cmd.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return "error: " + apiError(err)
	}
	defer func() { _ = out.Body.Close() }() // only read
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return "error: reading the body: " + err.Error()
	}
	return fmt.Sprintf("sha256:%s %d", hex.EncodeToString(h.Sum(nil)), n)
}

// apiError is an S3 error as "CODE: message", or the error itself.
func apiError(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode() + ": " + api.ErrorMessage()
	}
	return err.Error()
}
