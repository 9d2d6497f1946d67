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

package wire

import "slices"

// Whose identity reads a tenant's bucket, and where pqcache may connect: the policy that the manager
// and the agent take from their flags (the chart's ambientCredentials and endpoints values), and that
// the manager hands its workers through their environment.

// ReasonAmbientCredentialsNotAllowed is the reason when the Dataset names no credentials (no
// Secret, no service account), its namespace is not one the chart lets use pqcache's own identity
// (AmbientCredentialsSetting), so its bucket was read anonymously, and the store refused that. A
// sync report, a DatasetReplica and an event source give it.
const ReasonAmbientCredentialsNotAllowed = "AmbientCredentialsNotAllowed"

// AmbientCredentialsSetting names what allows a namespace pqcache's own identity, for messages.
const AmbientCredentialsSetting = "the chart value ambientCredentials.namespaces (flag --ambient-credentials-namespaces of the manager and the agent)"

// AmbientCredentialsMessage starts the message of ReasonAmbientCredentialsNotAllowed: what happened
// and the two ways out.
const AmbientCredentialsMessage = "the Dataset names no credentials, and its namespace may not use pqcache's own identity, so the bucket was read anonymously; " +
	"name a Secret in spec.source.s3.credentials.secretRef, or add the namespace to " + AmbientCredentialsSetting

// AmbientAllowed reports whether namespace may use ambient credentials: it is listed in allowed, or
// allowed holds "*" (every namespace, as before this policy).
func AmbientAllowed(allowed []string, namespace string) bool {
	return slices.Contains(allowed, namespace) || slices.Contains(allowed, "*")
}

// Environment of worker pods, set by the manager from its own flags.
const (
	// EnvNoAmbientCredentials, when "true", makes the worker read the bucket anonymously instead of
	// with its own identity (environment, profile, web identity, the node's instance role): the
	// Dataset names no credentials and its namespace is not allowed ambient ones.
	EnvNoAmbientCredentials = "PQCACHE_NO_AMBIENT_CREDENTIALS"
	// EnvDeniedCIDRs and EnvAllowedCIDRs are comma-separated address ranges: the worker never
	// connects to a store at an address in a denied range unless an allowed range holds it.
	EnvDeniedCIDRs  = "PQCACHE_DENIED_CIDRS"
	EnvAllowedCIDRs = "PQCACHE_ALLOWED_CIDRS"
)

// EndpointsSetting names what denies and allows endpoint addresses, for errors.
const EndpointsSetting = "the chart value endpoints.deniedCIDRs (or serviceCIDRs, podCIDRs; flag --denied-cidrs) denies; " +
	"to reach a store there, add its range to endpoints.allowedCIDRs (flag --allowed-cidrs)"
