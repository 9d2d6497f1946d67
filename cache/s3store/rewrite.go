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
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// rewritePart is the largest part a rewrite copies at once (S3 allows 5 GiB per part copy).
const rewritePart = 4 << 30

// Rewrite writes key again with the same bytes, inside the store (a multipart upload whose parts
// are copies of the object's own ranges): the object gets a new LastModified, and a multipart ETag,
// so a sync sees it changed and copies it again, while the data, and every digest of it, stays the
// same. This is how a BenchRun with duringRefresh makes real refreshes. Nothing passes through the
// caller's network. A plain copy onto itself with new metadata is not enough: some stores (versitygw's
// posix backend) then only update the metadata, and the object's LastModified and ETag stay as they
// were. It needs write access to the key; a refusal is returned as the store said it, for Classify.
// stamp is recorded in the object's metadata (pqcache-rewritten).
func (s *Store) Rewrite(ctx context.Context, key string, stamp time.Time) error {
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("reading s3://%s/%s: %w", s.bucket, key, err)
	}
	size, etag := aws.ToInt64(head.ContentLength), aws.ToString(head.ETag)
	if size == 0 {
		return errors.New("rewriting s3://" + s.bucket + "/" + key + ": the object is empty")
	}
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		ContentType: head.ContentType, Metadata: map[string]string{"pqcache-rewritten": stamp.UTC().Format(time.RFC3339Nano)}})
	if err != nil {
		return fmt.Errorf("rewriting s3://%s/%s: %w", s.bucket, key, err)
	}
	parts, err := s.copyParts(ctx, key, etag, aws.ToString(up.UploadId), size)
	if err == nil {
		_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		// Not left behind to be billed; the abort's own failure adds nothing the caller can act on.
		_, _ = s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId})
		return fmt.Errorf("rewriting s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// copyParts copies the object's ranges into the upload, in parts of at most rewritePart bytes, each
// only while the object is still the one read (etag).
func (s *Store) copyParts(ctx context.Context, key, etag, uploadID string, size int64) ([]types.CompletedPart, error) {
	var parts []types.CompletedPart
	source := url.PathEscape(s.bucket) + "/" + escapeKey(key)
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+rewritePart {
		end := min(off+rewritePart, size) - 1
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
			UploadId: aws.String(uploadID), PartNumber: aws.Int32(n), CopySource: aws.String(source),
			CopySourceIfMatch: aws.String(etag), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
		if err != nil {
			return nil, err
		}
		var tag *string
		if out.CopyPartResult != nil {
			tag = out.CopyPartResult.ETag
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: tag})
	}
	return parts, nil
}

// escapeKey escapes each segment of a key for a copy source, keeping the slashes.
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}
