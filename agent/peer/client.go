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

package peer

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/cache/s3store"
)

// clientAttempts is how often a request to a peer is tried: few, because a follower has the bucket
// to fall back on, and a peer that fails twice is better skipped than waited for.
const clientAttempts = 2

// peerHTTP sends the requests signed with a Key (node agents use agent/peer/peertls.Trust's client,
// built the same way with TLS): one connection pool per process, not one per sync; with
// timeouts (a peer that hangs is skipped for the bucket, not waited for), and no redirect to
// another host (a peer redirects nowhere, and the request carries a signature or a token).
var peerHTTP aws.HTTPClient = s3store.NewHTTPClient(s3store.DefaultClientTimeouts)

// NewStore returns the sync engine's store for bucket on the peer at endpoint (https://HOST:PORT
// between node agents), with the credentials and HTTP client auth sets.
func NewStore(ctx context.Context, endpoint string, auth ClientAuth, bucket string) (*s3store.Store, error) {
	o := s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = clientAttempts
			o.MaxBackoff = time.Second
			o.RateLimiter = ratelimit.None
		}),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	auth.Configure(&o)
	client := s3.New(o)
	return s3store.New(ctx, s3store.Config{Bucket: bucket, Client: client})
}

// Prefix is the key prefix under which a peer serves generation g: the follower's Options.Prefix.
func Prefix(g int64) string { return strconv.FormatInt(g, 10) + "/" }
