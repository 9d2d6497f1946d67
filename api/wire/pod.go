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

// Pod annotations and environment variables shared by workers and controllers.
const (
	// ProgressAnnotation holds a running sync's latest progress (compact SyncProgress JSON of at most
	// ProgressMaxBytes), patched by the worker onto its own pod.
	ProgressAnnotation = "data.pqcache.dev/progress"
	// ProgressMaxBytes bounds the progress annotation's value.
	ProgressMaxBytes = 1024

	// EnvPodName and EnvPodNamespace name the worker's pod (downward API), for its progress annotation.
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"

	// EnvAccessKeyID, EnvSecretAccessKey and EnvSessionToken are the AWS environment's static
	// credentials, and the keys of a Dataset's credentials Secret (credentials.secretRef): sync and
	// bench Jobs take those keys into their environment by reference, under the same names; the node
	// agent and the event hub read them from the Secret. EnvSessionToken is optional.
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"

	// EnvFreshDir is, for a mixed-staged input, the directory the stage step copied the Dataset's
	// fresh prefixes into; an engine reads those prefixes from there instead of the volume.
	EnvFreshDir = "PQCACHE_FRESH_DIR"
	// EnvFreshURL is, for a mixed-direct input, the s3:// URL of the Dataset's prefix: an engine reads
	// the fresh prefixes from the bucket instead of the volume.
	EnvFreshURL = "PQCACHE_FRESH_URL"
	// EnvFreshPrefixes lists the fresh prefixes, comma-separated, relative to the data root.
	EnvFreshPrefixes = "PQCACHE_FRESH_PREFIXES"
)
