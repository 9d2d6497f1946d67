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

package locality

import (
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readerPod(volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reader"}, Spec: corev1.PodSpec{Volumes: volumes}}
}

func datasetVolume(name, dataset string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: csiDriver, VolumeAttributes: map[string]string{"dataset": dataset}}}}
}

func TestDatasetsRead(t *testing.T) {
	pod := readerPod(
		datasetVolume("a", "events"),
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "other", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "other.example.com", VolumeAttributes: map[string]string{"dataset": "x"}}}},
		datasetVolume("b", "events"), datasetVolume("c", "orders"), datasetVolume("d", ""),
	)
	if got := DatasetsRead(pod); !reflect.DeepEqual(got, []string{"events", "orders"}) {
		t.Fatalf("DatasetsRead = %v", got)
	}
}

func TestPlaceRequiredANDsIntoEveryTerm(t *testing.T) {
	pod := readerPod(datasetVolume("a", "events"))
	// The user's own terms (ORed): each must also ask for the copy.
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
		}}}}
	if !Place(pod, ModeRequired, []string{"events"}, nil) {
		t.Fatal("Place changed nothing")
	}
	for i, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if len(term.MatchExpressions) != 2 || last.Key != "dataset.data.pqcache.dev/team-a.events" || !reflect.DeepEqual(last.Values, []string{"team-a"}) {
			t.Errorf("term %d: %+v", i, term.MatchExpressions)
		}
	}
	if Place(pod, ModeRequired, []string{"events"}, nil) {
		t.Fatal("placing a placed pod again changed it")
	}
	if pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		t.Fatal("required placement added preferences")
	}
}

func TestPlacePreferredWeighsNodeThenZone(t *testing.T) {
	pod := readerPod(datasetVolume("a", "events"), datasetVolume("b", "fresh"))
	zones := map[string][]string{"events": {"zone-a", "zone-b"}} // "fresh" has no ready copy yet
	if !Place(pod, ModePreferred, []string{"events", "fresh"}, zones) {
		t.Fatal("Place changed nothing")
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Fatal("preferred placement added a requirement")
	}
	var got []string
	for _, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		e := p.Preference.MatchExpressions[0]
		got = append(got, e.Key+"="+e.Values[0]+"@"+strconv.Itoa(int(p.Weight/50)))
	}
	want := []string{"dataset.data.pqcache.dev/team-a.events=team-a@2", "topology.kubernetes.io/zone=zone-a@1", "dataset.data.pqcache.dev/team-a.fresh=team-a@2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("preferences %v, want %v", got, want)
	}
	if Place(pod, ModePreferred, []string{"events", "fresh"}, zones) {
		t.Fatal("placing a placed pod again changed it")
	}
}
