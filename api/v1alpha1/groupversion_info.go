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

// Package v1alpha1 holds the data.pqcache.dev/v1alpha1 API: Dataset, an S3 prefix mirrored onto a
// PersistentVolumeClaim, and BenchRun, a set of query Jobs measured over a Dataset.
//
// The types carry their own validation (OpenAPI markers and CEL rules) so that a bad spec is refused
// by the API server with a message a person understands, before any controller sees it.
//
// +kubebuilder:object:generate=true
// +groupName=data.pqcache.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The registration is apimachinery's runtime.SchemeBuilder, as kubebuilder scaffolds it today, rather
// than controller-runtime's scheme.Builder (deprecated): an API package is imported by clients, the
// kubectl plugin and tests, so it does not pull in controller-runtime.
var (
	// SchemeGroupVersion is the group and version of every kind in this package, under the name that
	// apimachinery's conventions and the applyconfiguration generators look for.
	SchemeGroupVersion = schema.GroupVersion{Group: "data.pqcache.dev", Version: "v1alpha1"}

	// GroupVersion is SchemeGroupVersion under the name kubebuilder projects and our callers use.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme; each kind's file adds
	// itself in its init. The first function adds the group version's meta types (ListOptions,
	// WatchEvent...), which a scheme needs to serve list and watch options for the group.
	SchemeBuilder = runtime.NewSchemeBuilder(func(scheme *runtime.Scheme) error {
		metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
		return nil
	})

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register adds the kinds given to the scheme under SchemeGroupVersion: what each kind's init asks
// SchemeBuilder to do.
func register(objects ...runtime.Object) func(*runtime.Scheme) error {
	return func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(SchemeGroupVersion, objects...)
		return nil
	}
}
