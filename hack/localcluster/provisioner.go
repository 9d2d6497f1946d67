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

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The local cluster's default StorageClass provisions local PersistentVolumes: one directory under the
// node's volumes/ per claim, with node affinity to that node. Each node's supervisor runs a provisioner
// for its own node, as a node-local provisioner DaemonSet would. Like any external provisioner it acts on claims the PV controller
// has handed to it (the storage-provisioner annotation) once the scheduler has picked the node
// (WaitForFirstConsumer), and it removes a volume's directory when its claim is gone. Local volumes
// (unlike hostPath) get fsGroup ownership, so non-root workers can write them as on a real cluster.
// Expansion is not offered: the directories have no size to grow.

const (
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	// annNode names the node whose provisioner made (and deletes) a volume.
	annNode = "local.pqcache.dev/node"
)

// storageClass is the cluster's default StorageClass.
func storageClass() *storagev1.StorageClass {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        storageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       provisionerName,
		VolumeBindingMode: &wait,
		ReclaimPolicy:     &reclaim,
	}
}

// runProvisioner polls claims and volumes once a second until ctx ends. A poll of a small cluster's
// claims costs nothing, and a loop is easier to reason about than informers for something this small.
func (c *cluster) runProvisioner(ctx context.Context, n node) {
	var cs *kubernetes.Clientset
	for ctx.Err() == nil {
		if cs == nil {
			var err error
			if cs, err = c.nodeClient(); err != nil {
				logf("provisioner: %v", err)
			}
		}
		if cs != nil {
			if err := c.provisionOnce(ctx, cs, n); err != nil && ctx.Err() == nil {
				logf("provisioner: %v", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// provisionOnce provisions the pending claims the scheduler placed on n, and deletes n's released
// volumes.
func (c *cluster) provisionOnce(ctx context.Context, cs *kubernetes.Clientset, n node) error {
	claims, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" ||
			pvc.Annotations[annStorageProvisioner] != provisionerName || pvc.Annotations[annSelectedNode] != n.Name {
			continue
		}
		if err := c.provision(ctx, cs, pvc, n); err != nil {
			logf("provisioner: claim %s/%s: %v", pvc.Namespace, pvc.Name, err)
		}
	}
	volumes, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range volumes.Items {
		pv := &volumes.Items[i]
		if pv.Annotations[annProvisionedBy] != provisionerName || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[annNode] != n.Name {
			continue
		}
		if err := os.RemoveAll(c.volumeDir(n, pv.Name)); err != nil {
			logf("provisioner: removing %s: %v", c.volumeDir(n, pv.Name), err)
			continue
		}
		if err := cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("provisioner: deleting %s: %v", pv.Name, err)
			continue
		}
		logf("provisioner: deleted %s", pv.Name)
	}
	return nil
}

func (c *cluster) volumeDir(n node, pvName string) string { return c.nodeDir(n, "volumes", pvName) }

// provision creates the claim's directory and a local PersistentVolume bound to it in advance.
func (c *cluster) provision(ctx context.Context, cs *kubernetes.Clientset, pvc *corev1.PersistentVolumeClaim, n node) error {
	pvName := "pvc-" + string(pvc.UID)
	dir := c.volumeDir(n, pvName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	// Open to all, as hostPath-style provisioners do: fsGroup then narrows it to the pod's group.
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	reclaim := corev1.PersistentVolumeReclaimDelete
	if pvc.Spec.StorageClassName != nil {
		if sc, err := cs.StorageV1().StorageClasses().Get(ctx, *pvc.Spec.StorageClassName, metav1.GetOptions{}); err == nil && sc.ReclaimPolicy != nil {
			reclaim = *sc.ReclaimPolicy
		}
	}
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{annProvisionedBy: provisionerName, annNode: n.Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: request},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              storageClassName,
			VolumeMode:                    &fs,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name},
				}},
			}}}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating %s: %w", pvName, err)
	}
	logf("provisioner on %s: %s for claim %s/%s (%s) in %s", n.Name, pvName, pvc.Namespace, pvc.Name, request.String(), filepath.Base(dir))
	return nil
}
