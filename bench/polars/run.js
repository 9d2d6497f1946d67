#!/usr/bin/env node
// Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
//
// pqcache's Polars engine: runs ONE PDS-H query over TPC-H Parquet and prints its rows to stdout in
// the canonical row format (format.js), one per line, so that `pqcache bench` times the process,
// samples its memory and digests its answer exactly as it does DuckDB's.
//
//   node run.js --query N --data DIR|s3://bucket/prefix
//               [--fresh-data DIR|s3://bucket/prefix --fresh-prefix P ...] [--engine in-memory|streaming]
//
// Environment:
//   POLARS_MAX_THREADS       threads of Polars' pool (read by Polars; pqcache bench sets it from --threads)
//   POLARS_FORCE_ASYNC       1: the async (object store) reader for local files too (read by Polars)
//   PQCACHE_POLARS_ENGINE    in-memory (default) or streaming, when --engine is not given
//   PQCACHE_FRESH_DIR, PQCACHE_FRESH_URL, PQCACHE_FRESH_PREFIXES (comma-separated)
//                            the fresh overlay when --fresh-data is not given: what a BenchRun sets for
//                            mixed-staged (the staged directory) and mixed-direct (the bucket)
//   AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
//   PQCACHE_S3_PATH_STYLE    how s3:// data is reached (tables.js)
//   AWS_CA_BUNDLE            the CA bundle of the S3 endpoint (a private CA): Polars' HTTP client
//                            reads SSL_CERT_FILE, so it is passed on as that
// Exit status 0 with the rows on stdout, 2 for a usage error, 1 for a failed query (message on stderr).
"use strict";

// Before Polars starts its HTTP client: it trusts SSL_CERT_FILE, the AWS tools AWS_CA_BUNDLE.
if (process.env.AWS_CA_BUNDLE) process.env.SSL_CERT_FILE = process.env.AWS_CA_BUNDLE;

const { Tables } = require("./tables");
const { queries } = require("./queries");
const { formatRows } = require("./format");

const ENGINES = ["in-memory", "streaming"];

function usage(msg) {
  process.stderr.write(`run.js: ${msg}\nusage: node run.js --query N --data DIR|s3://bucket/prefix [--fresh-data DIR|URL --fresh-prefix P ...] [--engine in-memory|streaming]\n`);
  process.exit(2);
}

function parseArgs(argv, env) {
  const o = { freshPrefixes: [], engine: env.PQCACHE_POLARS_ENGINE || "in-memory" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "--query":
        o.query = Number(value());
        break;
      case "--data":
        o.data = value();
        break;
      case "--fresh-data":
        o.fresh = value();
        break;
      case "--fresh-prefix":
        o.freshPrefixes.push(...value().split(","));
        break;
      case "--engine":
        o.engine = value();
        break;
      case "--streaming":
        o.engine = "streaming";
        break;
      case "-h":
      case "--help":
        usage("help");
        break;
      default:
        usage(`unknown argument ${a}`);
    }
  }
  if (o.fresh === undefined) {
    o.fresh = env.PQCACHE_FRESH_DIR || env.PQCACHE_FRESH_URL || "";
    if (o.fresh && o.freshPrefixes.length === 0) o.freshPrefixes = (env.PQCACHE_FRESH_PREFIXES || "").split(",");
  }
  if (!Number.isInteger(o.query) || !queries[o.query]) usage(`--query must be 1-${Object.keys(queries).length}`);
  if (!o.data) usage("--data is required");
  if (!ENGINES.includes(o.engine)) usage(`--engine ${o.engine}: want ${ENGINES.join(" or ")}`);
  return o;
}

function main() {
  const opts = parseArgs(process.argv.slice(2), process.env);
  const tables = new Tables({ data: opts.data, fresh: opts.fresh, freshPrefixes: opts.freshPrefixes });
  const df = queries[opts.query](tables).collectSync({ engine: opts.engine });
  const lines = formatRows(df);
  if (lines.length > 0) process.stdout.write(lines.join("\n") + "\n");
}

try {
  main();
} catch (err) {
  process.stderr.write(`query failed: ${err && err.message ? err.message : err}\n`);
  process.exitCode = 1;
}
