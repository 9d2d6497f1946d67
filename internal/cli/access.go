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
	"fmt"

	"github.com/spf13/pflag"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/s3store"
)

// accessFlags are the manager's and the agent's policy on whose identity reads a tenant's bucket and
// which addresses a tenant's endpoint may have (the chart's ambientCredentials and endpoints values).
type accessFlags struct {
	ambientNamespaces []string
	deniedCIDRs       []string
	allowedCIDRs      []string
}

func (a *accessFlags) bind(f *pflag.FlagSet) {
	f.StringSliceVar(&a.ambientNamespaces, "ambient-credentials-namespaces", nil,
		"Namespaces whose Datasets may be read with pqcache's own identity (its environment, web identity, the node's role) when they name no Secret; \"*\" is every namespace. Elsewhere they are read anonymously, and a refusal gives the reason "+wire.ReasonAmbientCredentialsNotAllowed+".")
	f.StringSliceVar(&a.deniedCIDRs, "denied-cidrs", nil,
		"Address ranges no S3 or SQS endpoint may resolve to (e.g. 169.254.0.0/16,fe80::/10 and the cluster's Service and pod ranges), checked on each connection's resolved address.")
	f.StringSliceVar(&a.allowedCIDRs, "allowed-cidrs", nil,
		"Address ranges allowed even inside --denied-cidrs (an in-cluster S3 server).")
}

// guard is the endpoint guard the flags give; nil when no range is denied.
func (a *accessFlags) guard() (*s3store.DialGuard, error) {
	g, err := s3store.NewDialGuard(a.deniedCIDRs, a.allowedCIDRs, wire.EndpointsSetting)
	if err != nil {
		return nil, fmt.Errorf("--denied-cidrs/--allowed-cidrs: %w", err)
	}
	return g, nil
}
