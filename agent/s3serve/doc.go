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

// Package s3serve holds the read-only S3 server parts that the node agent's two S3 endpoints share:
// the peer endpoint (agent/peer, generations served to other nodes' agents) and the readers'
// endpoint (agent/readers, Datasets served to the pods of the same node). It reads a published
// generation's object index through sparse marks (Index, IndexCache), answers GetObject and
// HeadObject from a generation's tree with ranges, part numbers, ETags and checksums (ServeObject),
// writes ListObjectsV2 pages and S3 error documents, and checks AWS Signature Version 4 (Verifier).
// It decides nothing about who may read what: the servers do.
package s3serve
