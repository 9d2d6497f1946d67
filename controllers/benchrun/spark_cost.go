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

package benchrun

import (
	"math/big"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// sparkUsage turns a Spark runner's report into its status figures: the driver's peak (the runner's
// cgroup is the driver's container), the largest executor's and the sum of all, the bucket's bytes and the
// executors' lives. The compute figures need the Job's configuration: sparkCompute.
func sparkUsage(sp *wire.SparkResult, driverPeak int64) *datav1alpha1.SparkUsage {
	var peakMax int64
	for _, b := range sp.ExecutorPeakBytes {
		peakMax = max(peakMax, b)
	}
	return &datav1alpha1.SparkUsage{
		Executors:            int32(min(max(sp.Executors, 0), wire.MaxSparkExecutors)),
		DriverPeakBytes:      driverPeak,
		ExecutorPeakMaxBytes: peakMax,
		PeakBytesSum:         sp.PeakSum(driverPeak),
		S3ReadBytes:          sp.S3ReadBytes,
		ExecutorSeconds:      sp.ExecutorMillis / 1000,
	}
}

// sparkCompute fills a Spark result's core-seconds and GiB-seconds, summed over its pods: the driver's
// configuration for the Job's wall time, and each executor's CPU limit and memory for its life.
func sparkCompute(u *datav1alpha1.SparkUsage, j benchJob, wallMillis int64) *datav1alpha1.SparkUsage {
	out := *u
	_, cpuLimit, memory := sparkExecutorResources(j)
	driverSeconds := new(big.Rat).SetFrac64(wallMillis, 1000)
	execSeconds := new(big.Rat).SetInt64(u.ExecutorSeconds)
	sum := func(driver, executor *big.Rat) int64 {
		total := new(big.Rat).Add(new(big.Rat).Mul(driver, driverSeconds), new(big.Rat).Mul(executor, execSeconds))
		return roundRat(total)
	}
	out.CoreSeconds = sum(new(big.Rat).SetFrac64(j.config.CPU.MilliValue(), 1000), new(big.Rat).SetFrac64(cpuLimit.MilliValue(), 1000))
	out.GiBSeconds = sum(new(big.Rat).SetFrac64(j.config.Memory.Value(), 1<<30), new(big.Rat).SetFrac64(memory.Value(), 1<<30))
	return &out
}

// roundRat rounds a non-negative amount to the nearest integer, 0 when it does not fit an int64.
func roundRat(v *big.Rat) int64 {
	if n := roundMicros(v); n != nil {
		return *n
	}
	return 0
}

// withSparkExecutorCost adds the executors' compute to a Spark result's cost (the driver's is the
// Job's, which costMicros priced): each executor's CPU limit and memory at the run's prices for its
// life. The bucket's transfer is already in the driver's part, from S3ReadBytes.
func withSparkExecutorCost(p *datav1alpha1.Pricing, driver *int64, u *datav1alpha1.SparkUsage, j benchJob) *int64 {
	if driver == nil || u == nil || u.ExecutorSeconds == 0 {
		return driver
	}
	_, cpuLimit, memory := sparkExecutorResources(j)
	exec := costMicros(p, datav1alpha1.ResourceConfig{CPU: cpuLimit, Memory: memory}, datav1alpha1.BenchResult{WallMillis: u.ExecutorSeconds * 1000}, 0)
	if exec == nil {
		return nil
	}
	total := *driver + *exec
	return &total
}
