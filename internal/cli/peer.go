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

package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/agent"
	"github.com/pqcache/pqcache/agent/peer"
	"github.com/pqcache/pqcache/worker"
)

func newPeerCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "peer", Short: "Serve synced directories to other nodes' syncs, as a read-only S3 endpoint"}
	cmd.AddCommand(newPeerServeCommand())
	return cmd
}

func newPeerServeCommand() *cobra.Command {
	var (
		listen     string
		maxClients int
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "serve NAME=DIR...",
		Short: "Serve the published generations of each DIR as bucket NAME",
		Long: `serve answers ListObjectsV2, HeadObject and GetObject for the generations published in each DIR
(sync --generations), as bucket NAME, keys "<generation>/<key>", with the ETags, checksums and
LastModified the bucket gave when DIR was synced. Another node fills its copy from it with
sync --peer http://HOST:PORT/NAME --peer-generation N, which checks every byte against those and
falls back to the bucket. Requests are signed with the key in PQCACHE_PEER_KEY_ID and
PQCACHE_PEER_SECRET, on both sides.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			roots, err := peer.RootsOf(args)
			if err != nil {
				return err
			}
			key, err := worker.PeerKeyFromEnv()
			if err != nil {
				return err
			}
			log, err := worker.NewLogger(logLevel)
			if err != nil {
				return err
			}
			srv := &peer.Server{Auth: key, MaxClients: maxClients, Log: log, Roots: roots}
			return servePeer(cmd.Context(), listen, srv, cmd)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7480", "Address to serve on.")
	cmd.Flags().IntVar(&maxClients, "max-clients", peer.DefaultMaxClients, "Followers served at once; others are told to slow down.")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error.")
	return cmd
}

func servePeer(ctx context.Context, listen string, srv *peer.Server, cmd *cobra.Command) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "serving peers on http://%s\n", l.Addr())
	return agent.PeerServer{Listener: l, Server: srv}.Start(ctx)
}
