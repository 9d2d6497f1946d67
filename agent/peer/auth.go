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
	"net/http"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Caller is who sent a peer request, as its Authenticator established it.
type Caller struct {
	// Node is the caller's node, from its identity; empty when the identity names no node (a holder
	// of the shared Key, which only `pqcache peer serve` outside a cluster uses).
	Node string
}

// Authenticator establishes who sent a request, or refuses it. The node agents use
// agent/peer/identity (each agent's own bound ServiceAccount token, checked by TokenReview); the
// standalone `pqcache peer serve` uses a Key.
type Authenticator interface {
	Authenticate(r *http.Request) (Caller, error)
}

// ClientAuth sets up the S3 client a follower sends its peer requests with: its credentials and
// its HTTP client (which, for the node agents, speaks TLS and adds the agent's identity).
type ClientAuth interface {
	Configure(o *s3.Options)
}

// Authenticate checks r's signature with the shared key.
func (k Key) Authenticate(r *http.Request) (Caller, error) {
	return Caller{}, k.verify(r)
}

// Configure signs with the shared key, over the process's plain-HTTP peer client.
func (k Key) Configure(o *s3.Options) {
	o.Credentials = credentials.NewStaticCredentialsProvider(k.ID, k.Secret, "")
	o.HTTPClient = peerHTTP
}
