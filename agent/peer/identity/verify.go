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
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/agent/peer"
)

// Audience is the audience of the agents' peer tokens: a token kubelet mounts for the peer port is
// good for nothing else, and no other token of the agent (its API token) is good on the peer port.
const Audience = "pqcache-peer"

// The headers a peer request carries besides Authorization: Bearer <token>.
const (
	HeaderNonce     = "X-Pqcache-Nonce"
	HeaderTimestamp = "X-Pqcache-Timestamp"
)

// NodeNameExtra is the key under which a bound token's review names its pod's node.
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// maxTokenBytes bounds what is sent to the API server for review.
const maxTokenBytes = 16 << 10

// reviewTimeout bounds one TokenReview.
const reviewTimeout = 10 * time.Second

// Reviewer asks the API server about a token (TokenReview), for Audience.
type Reviewer interface {
	Review(ctx context.Context, token string) (authnv1.UserInfo, error)
}

// TokenReviewer reviews tokens through the API (the agent's ClusterRole grants create tokenreviews).
type TokenReviewer struct {
	Client client.Client
}

// Review sends a TokenReview for Audience and returns the token's user, or why it is refused.
func (t TokenReviewer) Review(ctx context.Context, token string) (authnv1.UserInfo, error) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}}}
	if err := t.Client.Create(ctx, tr); err != nil {
		return authnv1.UserInfo{}, fmt.Errorf("reviewing the caller's token: %w", err)
	}
	if !tr.Status.Authenticated {
		// The API server's error says why (expired, wrong audience, pod gone); it names no secret.
		return authnv1.UserInfo{}, fmt.Errorf("the caller's token is not valid for %s: %s", Audience, tr.Status.Error)
	}
	if !slices.Contains(tr.Status.Audiences, Audience) {
		return authnv1.UserInfo{}, fmt.Errorf("the caller's token is not for audience %s", Audience)
	}
	return tr.Status.User, nil
}

// Verifier is the peer server's Authenticator between node agents.
type Verifier struct {
	Reviewer Reviewer
	// Username is the only user accepted: the agents' ServiceAccount,
	// system:serviceaccount:NAMESPACE:NAME.
	Username string
	Tokens   *TokenCache
	Replay   *ReplayGuard
}

// NewVerifier accepts the tokens of ServiceAccount namespace/name, reviewed through c.
func NewVerifier(c client.Client, namespace, name string) *Verifier {
	return &Verifier{Reviewer: TokenReviewer{Client: c}, Username: ServiceAccountUser(namespace, name),
		Tokens: &TokenCache{}, Replay: &ReplayGuard{}}
}

// ServiceAccountUser is the user name of ServiceAccount namespace/name.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Authenticate checks r's token, nonce and timestamp and returns the caller's node. The token is
// checked before the nonce is remembered, so only agents can fill the replay set.
func (v *Verifier) Authenticate(r *http.Request) (peer.Caller, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" || len(token) > maxTokenBytes {
		return peer.Caller{}, errors.New("the request carries no bearer token")
	}
	nonce := r.Header.Get(HeaderNonce)
	if len(nonce) < 16 || len(nonce) > 128 {
		return peer.Caller{}, fmt.Errorf("the request carries no valid %s", HeaderNonce)
	}
	ms, err := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return peer.Caller{}, fmt.Errorf("the request carries no valid %s", HeaderTimestamp)
	}
	rev, err := v.review(r.Context(), token)
	if err != nil {
		return peer.Caller{}, err
	}
	if err := v.Replay.Check(nonce, time.UnixMilli(ms)); err != nil {
		return peer.Caller{}, err
	}
	return peer.Caller{Node: rev.Node}, nil
}

// review returns the cached review of token, or asks the API server and keeps a positive answer.
func (v *Verifier) review(ctx context.Context, token string) (Review, error) {
	if r, ok := v.Tokens.Get(token); ok {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	u, err := v.Reviewer.Review(ctx, token)
	if err != nil {
		return Review{}, err
	}
	if u.Username != v.Username {
		return Review{}, fmt.Errorf("%s is not the node agents' ServiceAccount", u.Username)
	}
	nodes := u.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return Review{}, errors.New("the caller's token is not bound to a pod on a node")
	}
	r := Review{Username: u.Username, Node: nodes[0]}
	v.Tokens.Put(token, r, expiry(token))
	return r, nil
}
