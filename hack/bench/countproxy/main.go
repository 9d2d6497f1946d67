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

// Command countproxy is a reverse proxy on 127.0.0.1 that counts the S3 requests passing through it
// by kind (LIST, GET, HEAD, PUT, other), so that benchmarks compare the request counts of pqcache,
// rclone and `aws s3 sync` with one measure, and the response body bytes it passed (BYTES): what the
// store sent, counted at the store's side of the network. GET /__counts returns the counts as JSON; DELETE
// /__counts resets them. The Host header is passed through unchanged, so SigV4 signatures made for the
// proxy's address stay valid at the server.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:7071", "address to listen on")
	target := flag.String("target", "http://127.0.0.1:7070", "S3 server to forward to")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil {
		log.Fatal(err)
	}
	var (
		mu     sync.Mutex
		counts = map[string]int64{}
	)
	proxy := httputil.NewSingleHostReverseProxy(u)
	http.HandleFunc("/__counts", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodDelete {
			counts = map[string]int64{}
		}
		_ = json.NewEncoder(w).Encode(counts)
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method
		if r.Method == http.MethodGet && r.URL.Query().Has("list-type") || r.Method == http.MethodGet && r.URL.Query().Has("prefix") {
			kind = "LIST"
		}
		mu.Lock()
		counts[kind]++
		mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		proxy.ServeHTTP(cw, r)
		mu.Lock()
		counts["BYTES"] += cw.n
		mu.Unlock()
	})
	log.Printf("countproxy %s -> %s", *listen, *target)
	log.Fatal(http.ListenAndServe(*listen, nil))
}

// countingWriter counts the body bytes of a response.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// Flush passes flushes on, so that streamed responses stream.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
