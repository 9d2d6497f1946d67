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
	"log/slog"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/agent/peer/peertls"
)

func addPeerSignerFlags(f *pflag.FlagSet, opts *managerOptions) {
	f.StringVar(&opts.peerCA, "peer-ca", "", "NAMESPACE/NAME of the Secret the manager keeps the node agents' peer CA in (made on first start) and of the ConfigMap it publishes the CA certificate in; with --peer-agent-service-account, the manager approves and signs the agents' "+peertls.SignerName+" certificate requests.")
	f.StringVar(&opts.peerAgentSA, "peer-agent-service-account", "", "NAMESPACE/NAME of the node agents' ServiceAccount: the only requester whose "+peertls.SignerName+" certificate requests are approved.")
}

// addPeerSigner runs the approver and signer of the agents' peer certificates when both flags are
// set (the chart sets them when the agent is enabled).
func addPeerSigner(mgr ctrl.Manager, opts managerOptions) error {
	if opts.peerCA == "" && opts.peerAgentSA == "" {
		return nil
	}
	ca, err := namespacedName("--peer-ca", opts.peerCA)
	if err != nil {
		return err
	}
	sa, err := namespacedName("--peer-agent-service-account", opts.peerAgentSA)
	if err != nil {
		return err
	}
	s := &peertls.Signer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), CA: ca, Agent: sa,
		Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("peer-signer")))}
	return s.SetupWithManager(mgr)
}
