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

package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/cache"
)

// The peer key comes from the environment, never from flags: a flag shows in every process list.
const (
	EnvPeerKeyID  = "PQCACHE_PEER_KEY_ID"
	EnvPeerSecret = "PQCACHE_PEER_SECRET"
)

// PeerKeyFromEnv is the key peers sign with, from the environment.
func PeerKeyFromEnv() (peer.Key, error) {
	k := peer.Key{ID: os.Getenv(EnvPeerKeyID), Secret: os.Getenv(EnvPeerSecret)}
	if k.ID == "" || k.Secret == "" {
		return k, fmt.Errorf("peers authenticate with a shared key: set %s and %s", EnvPeerKeyID, EnvPeerSecret)
	}
	return k, nil
}

// followPeer turns a sync's options into a follower's: it reads the peer's generation (opts.Follow),
// and the bucket, which cache.Sync is still given, is the fallback.
func followPeer(ctx context.Context, peerURL string, g int64, opts *cache.Options) error {
	if g <= 0 {
		return errors.New("--peer needs --peer-generation: the generation the peer published, which this copy becomes")
	}
	if opts.Generations == nil {
		return errors.New("--peer publishes the peer's generation: --generations must be at least 1")
	}
	u, err := url.Parse(peerURL)
	name := strings.Trim(u.Path, "/")
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("--peer %q: want http://HOST:PORT/NAME", peerURL)
	}
	key, err := PeerKeyFromEnv()
	if err != nil {
		return err
	}
	from, err := peer.NewStore(ctx, u.Scheme+"://"+u.Host, key, name)
	if err != nil {
		return err
	}
	opts.Follow = &cache.Follow{Peer: cache.Source{Store: from, Prefix: peer.Prefix(g)}, Generation: g}
	opts.Requests = from.Requests()
	opts.Generations.Index = true
	return nil
}
