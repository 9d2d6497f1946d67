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
	"errors"
	"net/http"
	"time"

	"github.com/pqcache/pqcache/agent/s3serve"
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

// verify checks r's SigV4 signature against the shared key, signed for the peers' Region.
func (k Key) verify(r *http.Request) error {
	if k.ID == "" || k.Secret == "" {
		return errors.New("this peer has no key to check requests with")
	}
	lookup := func(id string, _ time.Time) (string, error) {
		if id != k.ID {
			return "", s3serve.Refuse("InvalidAccessKeyId", "unknown access key")
		}
		return k.Secret, nil
	}
	_, err := s3serve.Verifier{Lookup: lookup, Region: Region}.Verify(r)
	return err
}
