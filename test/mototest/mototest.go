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

// Package mototest starts moto's server (an emulator of AWS's own services, pinned in
// hack/moto-requirements.txt) on 127.0.0.1 for tests: AWS's behaviours that versitygw does not have,
// on the same process model as package s3test. What moto is faithful to, and what not, as measured
// here: S3 event notifications to SQS in AWS's format (key URL-encoded, an s3:TestEvent when the
// configuration is set), multipart ETags (md5-of-md5s-N); it answers a part read (GET ?partNumber=N)
// with the whole object and no part count, and gives an SSE-KMS object its content's MD5 as ETag
// (AWS does not).
//
// The Python is found through $PQCACHE_MOTO_PYTHON or bin/moto-venv/bin/python at the module root;
// `make moto-env` installs it.
package mototest

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/pqcache/pqcache/test/testproc"
)

// Credentials, region and account of the server. moto checks no signature; its account is fixed.
const (
	AccessKey = "pqcache-test"
	SecretKey = "pqcache-test-secret"
	Region    = "us-east-1"
	Account   = "123456789012"
)

// Server is a running moto server. Its state lives in memory.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT, for S3 and SQS alike.
	Endpoint string

	proc testproc.Process
}

// Start starts moto's server on a free 127.0.0.1 port and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	python, err := Python()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{proc: testproc.Process{Name: "moto", LogPath: filepath.Join(t.TempDir(), "moto.log")}}
	err = testproc.OnFreePort(func(addr string) error {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		s.Endpoint = "http://" + addr
		s.proc.Health = s.Endpoint + "/moto-api/"
		return s.proc.Start(python, []string{"-m", "moto.server", "-H", host, "-p", port}, []string{"PYTHONDONTWRITEBYTECODE=1"})
	})
	if err != nil {
		t.Fatalf("starting moto: %v\n%s", err, s.proc.LogTail())
	}
	t.Cleanup(s.proc.Stop)
	return s
}

// Python returns the venv's Python that runs moto.
func Python() (string, error) {
	return testproc.Binary("PQCACHE_MOTO_PYTHON", filepath.Join("moto-venv", "bin", "python"))
}

// S3 returns an S3 client for the server: static credentials, path-style addressing, checksums only
// where an operation requires one (as the sync engine asks).
func (s *Server) S3() *s3.Client {
	return s3.New(s3.Options{Region: Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired})
}

// SQS returns an SQS client for the server, on the SDK's default protocol (AWS JSON), as against AWS.
func (s *Server) SQS() *sqs.Client {
	return sqs.New(sqs.Options{Region: Region, BaseEndpoint: aws.String(s.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")})
}

// CreateBucket creates a bucket and fails the test if it cannot.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.S3().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
}

// PutObject writes an object with the extra input set by tweak (nil: none) and fails the test if it
// cannot.
func (s *Server) PutObject(t testing.TB, bucket, key string, body []byte, tweak func(*s3.PutObjectInput)) {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}
	if tweak != nil {
		tweak(in)
	}
	if _, err := s.S3().PutObject(context.Background(), in); err != nil {
		t.Fatalf("putting s3://%s/%s: %v", bucket, key, err)
	}
}

// PutMultipart uploads parts as one multipart object, with no checksum declared (as older clients
// and most tools upload), and returns its ETag.
func (s *Server) PutMultipart(t testing.TB, bucket, key string, parts [][]byte) string {
	t.Helper()
	c, ctx := s.S3(), context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var done []s3types.CompletedPart
	for i, p := range parts {
		n := aws.Int32(int32(i + 1))
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: n, Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, s3types.CompletedPart{PartNumber: n, ETag: out.ETag})
	}
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: done}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ETag)
}

// DeleteObject removes an object and fails the test if it cannot.
func (s *Server) DeleteObject(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := s.S3().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("deleting s3://%s/%s: %v", bucket, key, err)
	}
}

// NotifyQueue creates a queue and has the bucket send its object created and removed events there,
// as an S3 bucket notification configuration does on AWS; it returns the queue's URL. moto then posts
// its s3:TestEvent to the queue, as AWS does.
func (s *Server) NotifyQueue(t testing.TB, bucket, queue string) string {
	t.Helper()
	ctx := context.Background()
	q, err := s.SQS().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue),
		Attributes: map[string]string{"VisibilityTimeout": "5"}})
	if err != nil {
		t.Fatalf("creating queue %s: %v", queue, err)
	}
	arn := "arn:aws:sqs:" + Region + ":" + Account + ":" + queue
	_, err = s.S3().PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String(bucket),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
			QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}}}}})
	if err != nil {
		t.Fatalf("notifying %s of %s's events: %v", queue, bucket, err)
	}
	return aws.ToString(q.QueueUrl)
}
