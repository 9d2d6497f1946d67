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

package wire

// The Spark engine on Kubernetes: what the controller tells the runner and run.py, and what they report
// back about the executors, which live in pods of their own that the runner cannot measure from its
// cgroup.
const (
	// EnvSparkMaster is Spark's master URL for run.py: k8s://https://kubernetes.default.svc in a
	// BenchRun's Job (the Job is the driver, in client mode), local[N] when unset.
	EnvSparkMaster = "PQCACHE_SPARK_MASTER"
	// EnvSparkConf is the path of a file of Spark configuration lines, key=value, that run.py sets
	// on its SparkSession. Values may refer to the driver's environment as ${env:NAME}, which run.py
	// expands before Spark sees them (Spark's own expansion misses some settings): the driver's pod IP
	// and name are only known in the pod.
	EnvSparkConf = "PQCACHE_SPARK_CONF"
	// SparkMasterInCluster is the master URL of a driver that runs in the cluster it schedules on.
	SparkMasterInCluster = "k8s://https://kubernetes.default.svc"
	// MaxSparkExecutors is the most executors a BenchRun engine may ask for (the API's bound).
	MaxSparkExecutors = 64
)

// SparkResult is what a Spark run measured beyond the driver, whose own peak is the BenchResult's
// CgroupPeakBytes (the runner's cgroup is the driver's container).
type SparkResult struct {
	// Executors is how many executors the runs asked for.
	Executors int `json:"executors"`
	// ExecutorPeakBytes is each executor's peak memory, from its container's cgroup (memory.peak),
	// largest first; slot k is the largest k-th largest executor over the iterations' applications
	// (each starts its own executors). At most MaxSparkExecutors.
	ExecutorPeakBytes []int64 `json:"executorPeakBytes,omitempty"`
	// S3ReadBytes is what all the executors read from the bucket as Spark's task input metrics count
	// it, warm-ups and every iteration included: 0 on the volume input. A lower bound on s3 (Parquet's
	// vectored reads bypass the counters: docs/bench.md); on a mixed input it counts the node copy's
	// files too.
	S3ReadBytes int64 `json:"s3ReadBytes"`
	// ExecutorMillis is the executors' lives summed: each executor's time from its registration to its
	// removal, over every application. The cost of N executors is charged on it.
	ExecutorMillis int64 `json:"executorMillis,omitempty"`
	// CoreSeconds and GiBSeconds are the CPU and memory the driver and executors held, summed over
	// their lives: what the cost of N executors is charged on (a BenchRun's status computes them).
	CoreSeconds int64 `json:"coreSeconds,omitempty"`
	GiBSeconds  int64 `json:"gibSeconds,omitempty"`
}

// PeakSum is the driver's peak plus every executor's: an upper bound of what the run held at once.
func (s *SparkResult) PeakSum(driver int64) int64 {
	sum := driver
	for _, b := range s.ExecutorPeakBytes {
		sum += b
	}
	return sum
}
