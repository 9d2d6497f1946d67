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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/testenv"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// withReplicas makes a Dataset keep per-node copies.
func withReplicas(ds *datav1alpha1.Dataset) {
	ds.Spec.Replicas = &datav1alpha1.ReplicaPolicy{}
	ds.Spec.Volume = datav1alpha1.DatasetVolume{}
}

// credentials reads the namespace's readers' Secret, as a pod would get it.
func credentials(g Gomega, ns string) (*corev1.Secret, s3creds.AccessKey) {
	var sec corev1.Secret
	g.Expect(testenv.Client.Get(testenv.Ctx, client.ObjectKey{Namespace: ns, Name: s3creds.SecretName}, &sec)).To(Succeed())
	key, err := s3creds.ParseAccessKeyID(string(sec.Data["AWS_ACCESS_KEY_ID"]))
	g.Expect(err).NotTo(HaveOccurred())
	return &sec, key
}

// masterKey is the key the issuer made.
func masterKey() []byte {
	GinkgoHelper()
	var sec corev1.Secret
	Expect(testenv.Client.Get(testenv.Ctx, master, &sec)).To(Succeed())
	return sec.Data[s3creds.MasterDataKey(MasterKeyGen)]
}

func ownerUIDs(o client.Object) []string {
	var uids []string
	for _, ref := range o.GetOwnerReferences() {
		uids = append(uids, string(ref.UID))
	}
	return uids
}

var _ = Describe("The readers' credentials", func() {
	It("are issued only in namespaces with per-node copies, owned by those Datasets, and derive from the master key", func() {
		ns, other := testenv.NewNamespace(), testenv.NewNamespace()
		a := testenv.NewDataset(ns, "sales", withReplicas)
		b := testenv.NewDataset(ns, "tpch", withReplicas)
		claim := testenv.NewDataset(other, "claimed")
		for _, ds := range []*datav1alpha1.Dataset{a, b, claim} {
			Expect(testenv.Client.Create(testenv.Ctx, ds)).To(Succeed())
		}
		var sec *corev1.Secret
		var key s3creds.AccessKey
		Eventually(func(g Gomega) {
			sec, key = credentials(g, ns)
			g.Expect(ownerUIDs(sec)).To(ConsistOf(string(a.UID), string(b.UID)))
		}).Should(Succeed())
		Expect(key).To(Equal(s3creds.AccessKey{Namespace: ns, KeyGen: MasterKeyGen, Epoch: epochs.At(now())}))
		Expect(string(sec.Data["AWS_SECRET_ACCESS_KEY"])).To(Equal(s3creds.Secret(masterKey(), string(sec.Data["AWS_ACCESS_KEY_ID"]))))
		Expect(sec.Annotations[AnnotationExpires]).To(Equal(epochs.Expires(key.Epoch).Format(time.RFC3339)))

		var cm corev1.ConfigMap
		Expect(testenv.Client.Get(testenv.Ctx, client.ObjectKey{Namespace: ns, Name: s3creds.ConfigMapName}, &cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("AWS_ENDPOINT_URL", "https://pqcache-s3.pqcache-system.svc"))
		Expect(cm.Data[CAKey]).To(ContainSubstring("BEGIN CERTIFICATE"))

		Consistently(func() bool {
			err := testenv.Client.Get(testenv.Ctx, client.ObjectKey{Namespace: other, Name: s3creds.SecretName}, &corev1.Secret{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(2*time.Second).Should(BeTrue(), "a namespace whose Datasets keep no copies on nodes got a key")
	})

	It("rotate when the epoch turns, the previous key still accepted", func() {
		ns := testenv.NewNamespace()
		ds := testenv.NewDataset(ns, "sales", withReplicas)
		Expect(testenv.Client.Create(testenv.Ctx, ds)).To(Succeed())
		var first s3creds.AccessKey
		Eventually(func(g Gomega) { _, first = credentials(g, ns) }).Should(Succeed())
		advance(epochs.Length)
		testenv.Touch(ds)
		Eventually(func(g Gomega) {
			_, key := credentials(g, ns)
			g.Expect(key.Epoch).To(Equal(first.Epoch + 1))
		}).Should(Succeed())
		Expect(epochs.Check(first.Epoch, now())).To(Succeed(), "the key of the epoch before is refused at the turn")
	})

	It("leave with the last Dataset that keeps copies", func() {
		ns := testenv.NewNamespace()
		ds := testenv.NewDataset(ns, "sales", withReplicas)
		Expect(testenv.Client.Create(testenv.Ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) { credentials(g, ns) }).Should(Succeed())
		Expect(testenv.Client.Delete(testenv.Ctx, ds)).To(Succeed())
		Eventually(func() bool {
			err := testenv.Client.Get(testenv.Ctx, client.ObjectKey{Namespace: ns, Name: s3creds.SecretName}, &corev1.Secret{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		Eventually(func() bool {
			err := testenv.Client.Get(testenv.Ctx, client.ObjectKey{Namespace: ns, Name: s3creds.ConfigMapName}, &corev1.ConfigMap{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("leave a namespace's own Secret of that name alone", func() {
		ns := testenv.NewNamespace()
		mine := &corev1.Secret{}
		mine.Namespace, mine.Name, mine.StringData = ns, s3creds.SecretName, map[string]string{"AWS_ACCESS_KEY_ID": "mine"}
		Expect(testenv.Client.Create(testenv.Ctx, mine)).To(Succeed())
		Expect(testenv.Client.Create(testenv.Ctx, testenv.NewDataset(ns, "sales", withReplicas))).To(Succeed())
		Consistently(func(g Gomega) {
			var sec corev1.Secret
			g.Expect(testenv.Client.Get(testenv.Ctx, client.ObjectKeyFromObject(mine), &sec)).To(Succeed())
			g.Expect(string(sec.Data["AWS_ACCESS_KEY_ID"])).To(Equal("mine"))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})
})
