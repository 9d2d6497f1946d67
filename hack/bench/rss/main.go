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

// Command rss runs a command and prints its wall time, CPU time and peak memory, sampled from
// /proc/PID/status every -interval: resident set (VmRSS), and its anonymous (RssAnon: heap, stacks,
// buffers) and file-backed (RssFile: the binary's pages, mapped files such as the manifest) parts
// apart, as the design asks; GNU time's %M mixes them. Output, one line:
//
//	wall_s user_s sys_s peak_rss_kib peak_anon_kib peak_file_kib
//
// Usage: rss [-interval 50ms] [-o FILE] -- COMMAND [ARGS...]
// The figures go to FILE with -o, and the command's output to rss's stdout and stderr; without -o
// the figures go to stdout and the command's output to stderr.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	interval := flag.Duration("interval", 50*time.Millisecond, "sampling interval")
	out := flag.String("o", "", "write the figures to this file instead of stdout")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: rss [-interval 50ms] [-o FILE] -- COMMAND [ARGS...]")
	}
	// The measured command runs to its end: nothing here cancels it.
	cmd := exec.CommandContext(context.Background(), flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = os.Stderr, os.Stderr, os.Stdin
	if *out != "" {
		cmd.Stdout = os.Stdout
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak [3]int64 // VmRSS, RssAnon, RssFile
	sample := func() {
		for i, v := range status(cmd.Process.Pid) {
			peak[i] = max(peak[i], v)
		}
	}
	t := time.NewTicker(*interval)
	defer t.Stop()
	var err error
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-t.C:
			sample()
		}
	}
	wall := time.Since(start)
	ps := cmd.ProcessState
	line := fmt.Sprintf("%.2f %.2f %.2f %d %d %d\n", wall.Seconds(), ps.UserTime().Seconds(), ps.SystemTime().Seconds(), peak[0], peak[1], peak[2])
	if *out != "" {
		if werr := os.WriteFile(*out, []byte(line), 0o644); werr != nil {
			log.Fatal(werr)
		}
	} else {
		fmt.Print(line)
	}
	if err != nil {
		os.Exit(1)
	}
}

// status reads VmRSS, RssAnon and RssFile (KiB) of pid; zeros once it has exited.
func status(pid int) [3]int64 {
	var v [3]int64
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return v
	}
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		i := map[string]int{"VmRSS": 0, "RssAnon": 1, "RssFile": 2}[name]
		if name != "VmRSS" && i == 0 {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		v[i] = n
	}
	return v
}
