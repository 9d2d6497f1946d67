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

// Command coredns is CoreDNS (github.com/coredns/coredns, unchanged) with the plugins a cluster's DNS
// add-on uses, for the local cluster (hack/localcluster). It is CoreDNS's own main with a shorter
// plugin list, the way CoreDNS documents custom builds: the released binary links every plugin,
// among them the AWS, Azure and Google Cloud SDKs, which cost a cold build minutes and serve nothing
// here.
//
// It lives in a module of its own so that CoreDNS's dependencies never enter pqcache's go.mod.
// `make coredns` builds it, statically, into bin/.
package main

import (
	"github.com/coredns/coredns/coremain"

	// The plugins of the local cluster's Corefile (hack/localcluster/addons.go), and log for a look.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
