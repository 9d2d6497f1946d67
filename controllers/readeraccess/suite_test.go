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

package readeraccess

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
	"github.com/pqcache/pqcache/internal/s3creds"
)

func TestReaderAccess(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Readers' access (envtest)")
}

var (
	master = types.NamespacedName{Namespace: "pqcache-system", Name: "pqcache-s3-master"}
	peerCA = types.NamespacedName{Namespace: "pqcache-system", Name: "pqcache-peer-ca"}
	epochs = s3creds.Epochs{Length: time.Hour, Skew: time.Minute}

	clockMu sync.Mutex
	clock   = time.Now()
)

// now is the issuer's clock; specs move it with advance.
func now() time.Time {
	clockMu.Lock()
	defer clockMu.Unlock()
	return clock
}

func advance(d time.Duration) {
	clockMu.Lock()
	defer clockMu.Unlock()
	clock = clock.Add(d)
}

var _ = BeforeSuite(func() {
	testenv.Start(jobs.CacheOptions(nil), func(mgr ctrl.Manager) error {
		return (&Issuer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Master: master, CA: peerCA,
			Endpoint: "https://pqcache-s3.pqcache-system.svc", Epochs: epochs, Now: now}).SetupWithManager(mgr)
	})
	Expect(testenv.Client.Create(testenv.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: master.Namespace}})).To(Succeed())
	Expect(testenv.Client.Create(testenv.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: peerCA.Namespace, Name: peerCA.Name},
		Data: map[string]string{CAKey: "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"}})).To(Succeed())
})

var _ = AfterSuite(testenv.Stop)
