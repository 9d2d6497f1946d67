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

package identity

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// tokenReread is how often the token file is read again: kubelet rewrites it at 80% of its life,
// minutes ahead of its expiry.
const tokenReread = 30 * time.Second

// TokenFile is the agent's projected ServiceAccount token (audience Audience), read again as
// kubelet rotates it.
type TokenFile struct {
	Path string

	mu     sync.Mutex
	token  string
	readAt time.Time
}

// Token returns the token, read from the file at most tokenReread ago.
func (f *TokenFile) Token() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token != "" && time.Since(f.readAt) < tokenReread {
		return f.token, nil
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("reading the peer token: %w", err)
	}
	t := string(bytes.TrimSpace(b))
	if t == "" {
		return "", fmt.Errorf("the peer token file %s is empty", f.Path)
	}
	f.token, f.readAt = t, time.Now()
	return t, nil
}

// HTTPDoer is the SDK's HTTP client interface (aws.HTTPClient).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Signing sends each request through Next with the agent's token, a fresh nonce and the time.
type Signing struct {
	Next  HTTPDoer
	Token func() (string, error)
}

// Do adds the identity headers to r and sends it. Each attempt of the SDK's retryer comes here,
// so each gets its own nonce.
func (s Signing) Do(r *http.Request) (*http.Response, error) {
	token, err := s.Token()
	if err != nil {
		return nil, err
	}
	nonce, err := NewNonce()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set(HeaderNonce, nonce)
	r.Header.Set(HeaderTimestamp, strconv.FormatInt(time.Now().UnixMilli(), 10))
	return s.Next.Do(r)
}

// NewNonce is 16 random bytes in hex.
func NewNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Client is the node agents' peer.ClientAuth: no AWS signature; each request carries the agent's
// token, and goes over the HTTP client HTTP returns (TLS, trusting the peer CA as it is now).
type Client struct {
	Token func() (string, error)
	HTTP  func() HTTPDoer
}

// Configure sends anonymous S3 requests through Signing.
func (c Client) Configure(o *s3.Options) {
	o.Credentials = aws.AnonymousCredentials{}
	o.HTTPClient = Signing{Next: c.HTTP(), Token: c.Token}
}
