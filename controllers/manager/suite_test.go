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

package manager

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"time"

	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// The whole manager as SetupAll wires it: CRD validation and the samples. The suite runs them in a real manager against a real kube-apiserver and etcd (testenv);
// envtest runs no kubelet and no built-in controllers: specs that need a Job to finish set its status
// themselves.

var (
	cfg       *rest.Config
	k8sClient client.Client
	ctx       context.Context
	// fakeClock drives refresh schedules and backoff; specs step it.
	fakeClock *clocktesting.FakeClock
)

func TestEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Manager suite")
}

var _ = BeforeSuite(func() {
	testenv.Start(jobs.CacheOptions(nil), func(mgr ctrl.Manager) error {
		return SetupAll(mgr, Options{Clock: testenv.Clock, Worker: testenv.Worker(), MaxConcurrentSyncs: 100, MaxConcurrentBenchJobs: 3,
			AdmissionSweepInterval: 2 * time.Second, AgentAccount: testenv.AgentAccount})
	})
	cfg, k8sClient, ctx, fakeClock = testenv.Config, testenv.Client, testenv.Ctx, testenv.Clock
})

var _ = AfterSuite(testenv.Stop)
