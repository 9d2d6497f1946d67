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

// Command hostile-s3 is a test tool, not part of pqcache: the S3 endpoint of package
// internal/hostiles3, which misbehaves on demand, as its own process, so that the e2e suite can run
// it as a pod beside a well-behaved store. Load objects with PutObject (any credentials), switch a
// bucket with PUT /_hostile/rules/BUCKET?behaviour=NAME[&op=list|get|head]. It listens on
// 127.0.0.1 unless told otherwise (-listen :9000 in a pod), and stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pqcache/pqcache/internal/hostiles3"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "Address to serve on.")
	interval := flag.Duration("interval", time.Second, "Pause between the bytes of a slow-body answer.")
	huge := flag.Int64("huge-bytes", 100<<20, "Size of a huge-document listing page, in bytes.")
	flag.Parse()
	s := hostiles3.New()
	s.Interval, s.HugeBytes = *interval, *huge
	if err := s.Listen(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "hostile-s3:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "hostile-s3: serving on", s.URL())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	s.Close()
}
