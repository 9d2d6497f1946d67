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

package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pqcache/pqcache/agent/peer"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/manifest"
)

// What a follower believes (docs/agent.md): the manifest of the generation it copies, as the seed
// published its digest in the seed's own DatasetReplica status. The API server lets only the seed's
// node write that status (the chart's replica node policy), and only the controller writes a
// follower's spec, where the digest reaches the follower. A peer, seed or follower, that serves a
// manifest with another digest, or a listing or metadata the manifest does not hold, is refused.

// readManifestDigest publishes, in status, the digest of the manifest of the generation the copy
// holds, computed when the generation changed since before (one read of its object index), or when
// status has none. A generation without an object index has no digest: followers refuse to copy it.
func readManifestDigest(dir string, before int64, st *datav1alpha1.DatasetReplicaStatus) {
	if st.Generation == 0 {
		st.ManifestDigest = ""
		return
	}
	if st.Generation == before && st.ManifestDigest != "" {
		return
	}
	d, err := peer.ManifestDigest(dir, st.Generation)
	if err != nil {
		d = ""
	}
	st.ManifestDigest = d
}

// trustPeer fetches, from the peer p, the manifest of the generation rep asks for and checks it
// against the seed's digest (spec.manifestDigest). It returns the peer as the sync may read it
// (every answer checked against that manifest), and the function that releases the manifest.
func trustPeer(ctx context.Context, p peer.Store, rep *datav1alpha1.DatasetReplica, dir string) (*peer.VerifiedStore, func(), error) {
	keep := filepath.Join(dir, manifest.Dir)
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", keep, err)
	}
	m, err := peer.FetchManifest(ctx, p, rep.Spec.Generation, rep.Spec.ManifestDigest, keep)
	if err != nil {
		return nil, nil, err
	}
	return m.VerifiedStore(p), m.Close, nil
}

// peerReason is the reason a follower's sync that failed with err records.
func peerReason(err error, otherwise string) string {
	if errors.Is(err, peer.ErrManifestMismatch) {
		return datav1alpha1.ReasonPeerManifestMismatch
	}
	return otherwise
}

// recordPeerRefusal makes a follower's sync that failed because its peer served something the seed's
// manifest does not hold say so (PeerManifestMismatch), and a sync that succeeded although some of
// the peer's answers were refused (those files came from the bucket) say how many.
func recordPeerRefusal(rep *datav1alpha1.DatasetReplica, err error, peerURL string, refused int64) {
	ls := rep.Status.LastSync
	if ls == nil {
		return
	}
	switch {
	case err != nil && errors.Is(err, peer.ErrManifestMismatch):
		ls.Reason = datav1alpha1.ReasonPeerManifestMismatch
		ls.Message = wire.Truncate(fmt.Sprintf("refused the peer %s, the last good generation stands: %v", peerURL, err), 1024)
		setReady(rep, metav1.ConditionFalse, ls.Reason, ls.Message)
	case err == nil && refused > 0:
		ls.Message = fmt.Sprintf("%d answers of the peer %s differed from the seed's manifest (%s) and were refused; their files came from the bucket",
			refused, peerURL, datav1alpha1.ReasonPeerManifestMismatch)
	}
}
