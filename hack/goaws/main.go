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

// Command goaws serves goaws's SQS emulator (github.com/Admiral-Piett/goaws, unchanged) on one address
// given by -listen. goaws's own command always listens on 0.0.0.0; the tests here must bind 127.0.0.1
// only, so this wrapper builds the same router and server loop on the address it is told.
//
// It lives in a module of its own so that goaws and its dependencies never enter pqcache's go.mod:
// only the test helper test/sqstest runs it. `make goaws` builds it into bin/.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/Admiral-Piett/goaws/app/conf"
	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/router"
	log "github.com/sirupsen/logrus"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4100", "host:port to listen on")
	visibility := flag.Int("visibility-timeout", 30, "default visibility timeout of new queues, in seconds")
	debug := flag.Bool("debug", false, "log every request")
	flag.Parse()
	if err := run(*listen, *visibility, *debug); err != nil {
		fmt.Fprintln(os.Stderr, "goaws:", err)
		os.Exit(1)
	}
}

func run(listen string, visibility int, debug bool) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("parsing -listen %q: %w", listen, err)
	}
	log.SetFormatter(&log.JSONFormatter{})
	log.SetOutput(os.Stderr)
	log.SetLevel(log.WarnLevel)
	if debug {
		log.SetLevel(log.DebugLevel)
	}
	// goaws reads its settings (the host and port it writes into queue URLs, queue defaults) only from
	// a YAML file. An empty Region keeps queue URLs at http://HOST:PORT/ACCOUNT/NAME, which resolve.
	dir, err := os.MkdirTemp("", "goaws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "goaws.yaml")
	yaml := fmt.Sprintf("Local:\n  Host: %q\n  Port: %q\n  AccountId: \"100010001000\"\n  QueueAttributeDefaults:\n    VisibilityTimeout: %d\n", host, port, visibility)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return err
	}
	conf.LoadYamlConfig(cfg, "Local")

	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// Visibility timeouts expire in goaws's periodic task, as in its own command.
	quit := make(chan struct{})
	defer close(quit)
	go gosqs.PeriodicTasks(time.Second, quit)
	log.Warnf("goaws listening on %s", l.Addr())
	return http.Serve(l, router.New())
}
