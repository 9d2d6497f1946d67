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
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Key is an access key shared by both sides of `pqcache peer serve` and `sync --peer` run by hand,
// outside a cluster: the client signs its requests with it (AWS Signature Version 4, as the sync
// engine's S3 client signs for any store), and the peer checks it. Node agents share no key (they
// use agent/peer/identity). It comes from the environment; it never reaches logs, events or status.
type Key struct {
	ID, Secret string
}

// String hides the secret from any log line that prints a Key.
func (k Key) String() string { return "peer.Key{ID: " + k.ID + "}" }

// maxSkew is how far a request's signing time may be from the peer's clock, as in S3.
const maxSkew = 15 * time.Minute

const amzDateFormat = "20060102T150405Z"

// verify checks r's SigV4 signature: it signs the same request again, over exactly the headers the
// client said it signed, with the shared secret, and compares the signatures.
func (k Key) verify(r *http.Request) error {
	if k.ID == "" || k.Secret == "" {
		return errors.New("this peer has no key to check requests with")
	}
	auth, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return err
	}
	if auth.accessKey != k.ID {
		return errors.New("unknown access key")
	}
	at, err := time.Parse(amzDateFormat, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("no valid X-Amz-Date")
	}
	if skew := time.Since(at); skew > maxSkew || skew < -maxSkew {
		return fmt.Errorf("the request was signed %s from this peer's clock", skew.Round(time.Second))
	}
	if auth.scope != at.Format("20060102")+"/"+Region+"/s3/aws4_request" {
		return errors.New("the credential scope is not this peer's")
	}
	again := signedCopy(r, auth.signedHeaders)
	payload := r.Header.Get("X-Amz-Content-Sha256")
	creds := aws.Credentials{AccessKeyID: k.ID, SecretAccessKey: k.Secret}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, payload, "s3", Region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		return fmt.Errorf("signing the request again: %w", err)
	}
	want, err := parseAuthorization(again.Header.Get("Authorization"))
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(want.signature), []byte(auth.signature)) != 1 {
		return errors.New("the signature does not match")
	}
	return nil
}

// signedCopy is r with only the headers the client signed (host and content-length are the
// request's own).
func signedCopy(r *http.Request, signed []string) *http.Request {
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	c := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}, ContentLength: r.ContentLength}
	for _, name := range signed {
		if name == "host" || name == "content-length" {
			continue
		}
		if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
			c.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	return c.WithContext(r.Context())
}

// authorization is what an AWS4-HMAC-SHA256 Authorization header says.
type authorization struct {
	accessKey, scope, signature string
	signedHeaders               []string
}

func parseAuthorization(h string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, errors.New("the request is not signed with AWS Signature Version 4")
	}
	for _, field := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch name {
		case "Credential":
			a.accessKey, a.scope, _ = strings.Cut(value, "/")
		case "SignedHeaders":
			a.signedHeaders = strings.Split(value, ";")
		case "Signature":
			a.signature = value
		}
	}
	if a.accessKey == "" || a.scope == "" || a.signature == "" || len(a.signedHeaders) == 0 {
		return a, errors.New("incomplete Authorization header")
	}
	return a, nil
}
