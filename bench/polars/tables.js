// Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
//
// Where each TPC-H table's Parquet files are, found as the DuckDB runner finds them
// (bench/duckdb.CreateOverlayViews): DATA/<table>.parquet, else every *.parquet under DATA/<table>/.
// DATA is a directory or s3://bucket/prefix. An overlay replaces the files under some prefixes of
// DATA (relative paths such as "lineitem/batch=7/") with those under the same prefixes of FRESH, a
// directory (mixed-staged: staged by `pqcache stage`) or an s3:// URL (mixed-direct: read from the
// bucket): the static tables from the volume, the newest partitions from elsewhere.
//
// S3 is read by Polars itself (its object store client, with the credentials it finds: the options
// below from the standard AWS environment, or its own chain, e.g. web identity), so nothing here
// lists a bucket: a table under s3:// is probed for <table>.parquet, else globbed as
// <table>/**/*.parquet, and an S3 fresh prefix is globbed as PREFIX**/*.parquet.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const pl = require("nodejs-polars");

const TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"];

const isS3 = (p) => p.startsWith("s3://");

// cloudOptions are Polars' object store options from the environment (undefined for local data).
// AWS_ENDPOINT_URL, AWS_REGION (or AWS_DEFAULT_REGION), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN as the AWS tools read them; PQCACHE_S3_PATH_STYLE=true|false chooses
// endpoint/bucket/key or bucket.endpoint/key addressing (Polars' default is path style).
function cloudOptions(env = process.env) {
  const opts = {};
  const set = (key, value) => {
    if (value !== undefined && value !== "") opts[key] = value;
  };
  set("aws_endpoint_url", env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
  set("aws_region", env.AWS_REGION || env.AWS_DEFAULT_REGION);
  set("aws_access_key_id", env.AWS_ACCESS_KEY_ID);
  set("aws_secret_access_key", env.AWS_SECRET_ACCESS_KEY);
  set("aws_session_token", env.AWS_SESSION_TOKEN);
  if (env.PQCACHE_S3_PATH_STYLE !== undefined && env.PQCACHE_S3_PATH_STYLE !== "") {
    opts.aws_virtual_hosted_style_request = String(!/^(1|true|yes)$/i.test(env.PQCACHE_S3_PATH_STYLE));
  }
  if (opts.aws_endpoint_url && opts.aws_endpoint_url.startsWith("http://")) opts.aws_allow_http = "true";
  return opts;
}

// normalizePrefix makes a fresh prefix name a directory ("lineitem/batch=7" -> "lineitem/batch=7/")
// unless it names one file, so a prefix means the same on a volume and in a bucket.
function normalizePrefix(p) {
  p = p.replace(/^\/+/, "");
  return p.endsWith("/") || p.endsWith(".parquet") ? p : p + "/";
}

// prefixTable is the table a fresh prefix belongs to ("lineitem/batch=7/" -> "lineitem").
function prefixTable(p) {
  const first = p.split("/")[0];
  return first.endsWith(".parquet") ? first.slice(0, -".parquet".length) : first;
}

// localFiles lists table t's Parquet files under dir: dir/t.parquet, or dir/t/**/*.parquet, sorted.
function localFiles(dir, t) {
  const flat = path.join(dir, t + ".parquet");
  if (fs.existsSync(flat)) return [flat];
  const files = [];
  const walk = (d) => {
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch (err) {
      if (err.code === "ENOENT") return;
      throw err;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".parquet")) files.push(p);
    }
  };
  walk(path.join(dir, t));
  return files.sort();
}

class Tables {
  // data: a directory or s3:// URL; fresh: the same or ""; freshPrefixes: paths relative to both.
  constructor({ data, fresh = "", freshPrefixes = [], env = process.env }) {
    if (!data) throw new Error("--data is required");
    this.data = data.replace(/\/+$/, "");
    this.fresh = fresh.replace(/\/+$/, "");
    this.prefixes = fresh ? freshPrefixes.filter((p) => p !== "").map(normalizePrefix) : [];
    if (this.prefixes.length > 0 && isS3(this.data)) {
      throw new Error("a fresh overlay needs --data on a volume (a directory), not s3://");
    }
    this.cloud = cloudOptions(env);
    this.frames = {};
    for (const t of TABLES) {
      Object.defineProperty(this, t, { get: () => this.frame(t), enumerable: true });
    }
  }

  scan(source) {
    const opts = { hivePartitioning: false };
    if (isS3(source)) opts.cloudOptions = this.cloud;
    return pl.scanParquet(source, opts);
  }

  // frame is table t as a LazyFrame, built once per process.
  frame(t) {
    if (!this.frames[t]) this.frames[t] = this.build(t);
    return this.frames[t];
  }

  build(t) {
    if (isS3(this.data)) return this.s3Table(t);
    const fresh = this.prefixes.filter((p) => prefixTable(p) === t);
    const isFresh = (rel) => fresh.some((p) => rel.startsWith(p));
    const rel = (base, f) => path.relative(base, f).split(path.sep).join("/");
    const files = localFiles(this.data, t).filter((f) => !isFresh(rel(this.data, f)));
    if (fresh.length === 0) {
      if (files.length === 0) throw new Error(`table ${t}: no Parquet files in ${this.data}`);
      // One multi-file scan where a glob says the same: Polars plans it better than a union.
      return files.length === 1 ? this.scan(files[0]) : this.scan(path.join(this.data, t, "**", "*.parquet"));
    }
    const frames = files.map((f) => this.scan(f));
    if (isS3(this.fresh)) {
      for (const p of fresh) frames.push(this.scan(p.endsWith(".parquet") ? `${this.fresh}/${p}` : `${this.fresh}/${p}**/*.parquet`));
    } else {
      for (const f of localFiles(this.fresh, t)) if (isFresh(rel(this.fresh, f))) frames.push(this.scan(f));
    }
    if (frames.length === 0) throw new Error(`table ${t}: no Parquet files in ${this.data} or ${this.fresh}`);
    return frames.length === 1 ? frames[0] : pl.concat(frames);
  }

  // s3Table probes for the flat file (a HEAD and its footer), else scans the table's directory.
  s3Table(t) {
    const flat = this.scan(`${this.data}/${t}.parquet`);
    try {
      void flat.columns;
      return flat;
    } catch (err) {
      if (!/not found|404/i.test(String(err && err.message))) throw err;
      return this.scan(`${this.data}/${t}/**/*.parquet`);
    }
  }
}

module.exports = { Tables, TABLES, cloudOptions, normalizePrefix, localFiles };
