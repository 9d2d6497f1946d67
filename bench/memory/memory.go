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

// Package memory measures the peak memory of a process tree, the number that decides whether a query
// OOMs. It samples /proc every interval (50 ms by default) and keeps the peak of the tree's total,
// anonymous and file-backed resident memory above the tree's baseline, because resident memory mixes
// heap with mmap'd file pages (an engine that maps Parquet looks 10x bigger than one that reads it).
// A sampler can miss a short peak; Result says so by comparing with the kernel's max RSS.
package memory

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultInterval is how often the tree is sampled.
const DefaultInterval = 50 * time.Millisecond

// Usage is the resident memory of a process tree, in bytes.
type Usage struct {
	Total int64 `json:"total"`
	Anon  int64 `json:"anon"`
	// File is file-backed and shared memory (RssFile + RssShmem): mmap'd data and shared libraries.
	File int64 `json:"file"`
}

// Peak is what a Sampler saw.
type Peak struct {
	// Baseline is the tree's usage at the first sample, right after the process started.
	Baseline Usage `json:"baseline"`
	// Max is the largest usage seen, field by field.
	Max Usage `json:"max"`
	// Samples is the number of samples taken.
	Samples int `json:"samples"`
}

// AboveBaseline returns the peak minus the baseline, never negative.
func (p Peak) AboveBaseline() Usage {
	return Usage{Total: max(0, p.Max.Total-p.Baseline.Total), Anon: max(0, p.Max.Anon-p.Baseline.Anon), File: max(0, p.Max.File-p.Baseline.File)}
}

// Sampler samples the tree rooted at one pid until stopped.
type Sampler struct {
	pid      int
	interval time.Duration
	mu       sync.Mutex
	peak     Peak
	stop     context.CancelFunc
	done     chan struct{}
}

// Start samples the tree of pid every interval until Stop. It takes the first sample at once.
func Start(pid int, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{pid: pid, interval: interval, stop: cancel, done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// Stop ends sampling, takes a last sample, and returns the peak.
func (s *Sampler) Stop() Peak {
	s.stop()
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (s *Sampler) sample() {
	u, ok := TreeUsage(s.pid)
	if !ok {
		return // the process is gone; keep what was seen
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peak.Samples == 0 {
		s.peak.Baseline = u
	}
	s.peak.Samples++
	s.peak.Max.Total = max(s.peak.Max.Total, u.Total)
	s.peak.Max.Anon = max(s.peak.Max.Anon, u.Anon)
	s.peak.Max.File = max(s.peak.Max.File, u.File)
}

// TreeUsage sums the resident memory of pid and its descendants; ok is false when pid is gone.
func TreeUsage(pid int) (Usage, bool) {
	var total Usage
	found := false
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		u, ok := processUsage(p)
		if !ok {
			continue
		}
		found = true
		total.Total += u.Total
		total.Anon += u.Anon
		total.File += u.File
		stack = append(stack, children(p)...)
	}
	return total, found
}

// processUsage reads VmRSS, RssAnon, RssFile and RssShmem from /proc/PID/status.
func processUsage(pid int) (Usage, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status") //nolint:gosec // G703: a /proc path made of an integer pid
	if err != nil {
		return Usage{}, false
	}
	var u Usage
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var field *int64
		switch string(name) {
		case "VmRSS":
			field = &u.Total
		case "RssAnon":
			field = &u.Anon
		case "RssFile", "RssShmem":
			v := kib(rest)
			u.File += v
			continue
		default:
			continue
		}
		*field = kib(rest)
	}
	return u, true
}

func kib(b []byte) int64 {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseInt(f[0], 10, 64)
	return v << 10
}

// children lists the child pids of every thread of pid (/proc/PID/task/TID/children).
func children(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(t) //nolint:gosec // G703: a path /proc's own glob matched, made of an integer pid
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
