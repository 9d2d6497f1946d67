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

package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Fixture is a YAML file of one or more objects. Every object but the last is created first and
// must be accepted; the last is then created or, when it names an object created before it, applied
// as an update of that object's spec. Invalid fixtures start with "# expect: <message>", a substring
// of the API server's error.
type Fixture struct {
	// Name is the file's name without .yaml.
	Name string
	// Want is the substring the API server's refusal must hold; empty for a valid fixture.
	Want string
	// Objects are the file's objects, in order.
	Objects []*unstructured.Unstructured
}

// LoadFixture reads the fixture at path.
func LoadFixture(path string) Fixture {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	f := Fixture{Name: strings.TrimSuffix(filepath.Base(path), ".yaml")}
	first, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	if rest, ok := strings.CutPrefix(string(first), "# expect: "); ok {
		f.Want = rest
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Fail(fmt.Sprintf("decoding %s: %v", path, err))
		}
		if len(u.Object) > 0 {
			f.Objects = append(f.Objects, u)
		}
	}
	Expect(f.Objects).NotTo(BeEmpty(), "%s holds no object", path)
	return f
}

// Apply creates the Fixture's objects in namespace ns and returns the API server's answer to the last.
func (f Fixture) Apply(ns string) error {
	GinkgoHelper()
	created := map[string]bool{}
	key := func(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }
	for _, u := range f.Objects[:len(f.Objects)-1] {
		u.SetNamespace(ns)
		Expect(Client.Create(Ctx, u)).To(Succeed(), "setup object %s of %s", key(u), f.Name)
		created[key(u)] = true
	}
	last := f.Objects[len(f.Objects)-1]
	last.SetNamespace(ns)
	if !created[key(last)] {
		return Client.Create(Ctx, last)
	}
	// The manager may write status between our read and our update: retry conflicts, as kubectl does.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(last.GroupVersionKind())
		if err := Client.Get(Ctx, client.ObjectKeyFromObject(last), current); err != nil {
			return err
		}
		current.Object["spec"] = last.Object["spec"]
		return Client.Update(Ctx, current)
	})
}

// FixtureFiles are the fixtures under controllers/testdata/dir, sorted.
func FixtureFiles(dir string) []string {
	files, err := filepath.Glob(filepath.Join(repoRoot(), "controllers", "testdata", dir, "*.yaml"))
	if err != nil {
		panic(err)
	}
	sort.Strings(files)
	return files
}

// NewNamespace creates a namespace of a generated name for one spec.
func NewNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pqcache-test-"}}
	Expect(Client.Create(Ctx, ns)).To(Succeed())
	return ns.Name
}

// DeleteJobs deletes Jobs as the garbage collector or a TTL would (envtest runs neither).
func DeleteJobs(list ...batchv1.Job) {
	GinkgoHelper()
	for i := range list {
		Expect(client.IgnoreNotFound(Client.Delete(Ctx, &list[i], client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
	}
}

// Update changes obj as mutate says, retrying on conflicts with the controller's status writes.
func Update[T client.Object](obj T, mutate func(T)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := Client.Get(Ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return Client.Update(Ctx, obj)
	})).To(Succeed())
}
