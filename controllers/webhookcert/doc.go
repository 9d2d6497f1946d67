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

// Package webhookcert gives the manager's admission webhook a serving certificate that survives
// GitOps: nothing secret or random is rendered by the chart (Argo CD and Flux render it with `helm
// template`, where Helm's `lookup` finds nothing and a rendered certificate would change on every
// sync). Either cert-manager issues the certificate into a Secret the manager mounts, or the manager
// makes its own CA and serving certificate at run time (Rotator), keeps them in a Secret, renews them
// before they expire, and writes the CA into the webhook configuration's caBundle. The chart leaves
// caBundle out, so neither `helm upgrade` nor a GitOps sync takes it back.
package webhookcert
