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

// Package readeraccess issues the credentials with which a namespace's pods read its Datasets
// through the node agents' S3 endpoint for readers (agent/readers). In every namespace that has a
// Dataset with per-node copies, it keeps the Secret s3creds.SecretName (the namespace's current
// access key, rotated each epoch) and the ConfigMap s3creds.ConfigMapName (the endpoint's URL and
// the CA its certificate chains to), both owned by those Datasets, so that they go with the last
// one. The keys derive from one master key that it makes once, in a Secret of the manager's
// namespace, which the agents read by name: no agent reads a tenant's Secret.
package readeraccess

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=update;delete,resourceNames=pqcache-s3-credentials
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=update;delete,resourceNames=pqcache-s3

// MasterKeyGen is the key generation of the master key the issuer makes: the one data key of the
// master Secret, and the KeyGen of every access key issued.
const MasterKeyGen = 1

// Issuer is the reconciler, keyed by namespace.
type Issuer struct {
	Client client.Client
	// Reader reads Secrets and ConfigMaps uncached: the manager caches neither.
	Reader client.Reader
	// Master names the master key's Secret, in the manager's namespace.
	Master types.NamespacedName
	// CA is the ConfigMap whose ca.crt the agents' certificates chain to (the peer CA's).
	CA types.NamespacedName
	// Endpoint is the URL pods reach their node's endpoint at (the readers' Service).
	Endpoint string
	Epochs   s3creds.Epochs
	Log      *slog.Logger
	Now      func() time.Time
}

// SetupWithManager reconciles a namespace whenever one of its Datasets changes.
func (r *Issuer) SetupWithManager(mgr ctrl.Manager) error {
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("readeraccess").Watches(&datav1alpha1.Dataset{}, toNamespace).Complete(r)
}

// Reconcile makes the namespace's Secret and ConfigMap current, owned by its Datasets with per-node
// copies, or removes them when it has none; it comes back when the epoch turns.
func (r *Issuer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Namespace
	var list datav1alpha1.DatasetList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return ctrl.Result{}, err
	}
	var owners []client.Object
	for i := range list.Items {
		if ds := &list.Items[i]; ds.Spec.Replicas != nil && ds.DeletionTimestamp.IsZero() {
			owners = append(owners, ds)
		}
	}
	if len(owners) == 0 {
		return ctrl.Result{}, r.remove(ctx, ns)
	}
	master, err := r.masterKey(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.now()
	epoch := r.epochs().At(now)
	id := s3creds.AccessKey{Namespace: ns, KeyGen: MasterKeyGen, Epoch: epoch}.ID()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s3creds.SecretName,
		Annotations: map[string]string{AnnotationExpires: r.epochs().Expires(epoch).Format(time.RFC3339)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(id), "AWS_SECRET_ACCESS_KEY": []byte(s3creds.Secret(master, id))}}
	if err := r.ensure(ctx, secret, owners, func(cur client.Object) bool {
		c := cur.(*corev1.Secret)
		same := maps.EqualFunc(c.Data, secret.Data, slices.Equal) && c.Annotations[AnnotationExpires] == secret.Annotations[AnnotationExpires]
		c.Data, c.Annotations = secret.Data, merge(c.Annotations, secret.Annotations)
		return !same
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("issuing namespace %s its readers' key: %w", ns, err)
	}
	cm, err := r.configMap(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensure(ctx, cm, owners, func(cur client.Object) bool {
		c := cur.(*corev1.ConfigMap)
		same := maps.Equal(c.Data, cm.Data)
		c.Data = cm.Data
		return !same
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("publishing the readers' endpoint to namespace %s: %w", ns, err)
	}
	return ctrl.Result{RequeueAfter: r.epochs().Start(epoch+1).Sub(now) + time.Second}, nil
}

// AnnotationExpires on the Secret says when its key stops being accepted.
const AnnotationExpires = "pqcache.dev/expires"

// configMap is what pods read to reach the endpoint: its URL and region (as the environment
// variables SDKs read, for envFrom) and the CA certificate (ca.crt, to mount).
func (r *Issuer) configMap(ctx context.Context, ns string) (*corev1.ConfigMap, error) {
	var ca corev1.ConfigMap
	if err := r.Reader.Get(ctx, r.CA, &ca); err != nil {
		return nil, fmt.Errorf("reading the CA ConfigMap %s: %w", r.CA, err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s3creds.ConfigMapName},
		Data: map[string]string{"AWS_ENDPOINT_URL": r.Endpoint, "AWS_REGION": "us-east-1", CAKey: ca.Data[CAKey]}}, nil
}

// CAKey is the ConfigMap's key of the CA certificate.
const CAKey = "ca.crt"

// ensure creates obj owned by owners, or brings the existing one to obj's contents (update says
// whether it changed anything) with every owner among its owners. Not jobs.ShareOwnership: that reads
// through the manager's cached client first, which for a Secret or ConfigMap would start an informer
// over every namespace's (the manager caches neither); ensure reads them uncached. One that is not pqcache's is left
// alone: the namespace's own object of that name wins, and the reconcile says so.
func (r *Issuer) ensure(ctx context.Context, obj client.Object, owners []client.Object, update func(cur client.Object) bool) error {
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	err := r.Reader.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		obj.SetLabels(map[string]string{jobs.LabelName: "pqcache", jobs.LabelManagedBy: "pqcache"})
		for _, o := range owners {
			if err := controllerutil.SetOwnerReference(o, obj, r.Client.Scheme()); err != nil {
				return err
			}
		}
		return r.Client.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	if cur.GetLabels()[jobs.LabelManagedBy] != "pqcache" {
		return fmt.Errorf("%s exists and is not pqcache's: rename or remove it", obj.GetName())
	}
	changed := update(cur)
	for _, o := range owners {
		if !slices.ContainsFunc(cur.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == o.GetUID() }) {
			if err := controllerutil.SetOwnerReference(o, cur, r.Client.Scheme()); err != nil {
				return err
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return r.Client.Update(ctx, cur)
}

// remove deletes the namespace's Secret and ConfigMap when they are pqcache's: its Datasets exist
// but none keeps copies on nodes any more.
func (r *Issuer) remove(ctx context.Context, ns string) error {
	for _, obj := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		name := s3creds.SecretName
		if _, ok := obj.(*corev1.ConfigMap); ok {
			name = s3creds.ConfigMapName
		}
		if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if obj.GetLabels()[jobs.LabelManagedBy] != "pqcache" {
			continue
		}
		if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// masterKey reads the master key, making it the first time; two managers that race both read back
// the one created first.
func (r *Issuer) masterKey(ctx context.Context) ([]byte, error) {
	var sec corev1.Secret
	err := r.Reader.Get(ctx, r.Master, &sec)
	if apierrors.IsNotFound(err) {
		key := make([]byte, s3creds.MinMasterKey)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		sec = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Master.Namespace, Name: r.Master.Name,
			Labels: map[string]string{"app.kubernetes.io/component": "readers-master-key"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{s3creds.MasterDataKey(MasterKeyGen): key}}
		if err = r.Client.Create(ctx, &sec); apierrors.IsAlreadyExists(err) {
			err = r.Reader.Get(ctx, r.Master, &sec)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the readers' master key %s: %w", r.Master, err)
	}
	key := sec.Data[s3creds.MasterDataKey(MasterKeyGen)]
	if len(key) < s3creds.MinMasterKey {
		return nil, fmt.Errorf("the readers' master key %s holds no key %q of %d bytes or more", r.Master, s3creds.MasterDataKey(MasterKeyGen), s3creds.MinMasterKey)
	}
	return key, nil
}

// merge sets b's entries in a.
func merge(a, b map[string]string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, b)
	return a
}

func (r *Issuer) epochs() s3creds.Epochs {
	if r.Epochs.Length > 0 {
		return r.Epochs
	}
	return s3creds.DefaultEpochs
}

func (r *Issuer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
