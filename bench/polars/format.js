// Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
//
// The canonical row format, the one the DuckDB runner prints too (its Go side is bench/canon, whose
// package doc is the specification): one line per row, fields separated by "|", and per value
//   null                 NULL
//   integer              its decimal digits                      42, -7
//   decimal              exact digits rounded to 2 places        1234.57
//   float                shortest round-trip digits, then
//                        rounded to 2 places                     0.33
//   date                 YYYY-MM-DD                              1995-03-15
//   string               as is, with \ | CR LF escaped           Customer#000000001
//   boolean              true, false
// Rounding is half away from zero on the decimal digits (2.345 -> 2.35, -2.345 -> -2.35), and a
// value that rounds to zero prints without a sign (0.00). Decimals are rounded from their exact
// digits and floats from their shortest digits, so the same number computed exactly by one engine and
// as a float by the other prints the same unless it lies within an ulp of a half cent.
"use strict";

const pl = require("nodejs-polars");

// roundDecimal rounds a plain decimal string ("-123.4567", "17", ".5") to two places.
function roundDecimal(s) {
  let neg = s.startsWith("-");
  if (neg || s.startsWith("+")) s = s.slice(1);
  const dot = s.indexOf(".");
  const intPart = (dot < 0 ? s : s.slice(0, dot)) || "0";
  const frac = (dot < 0 ? "" : s.slice(dot + 1)).padEnd(3, "0");
  let cents = BigInt(intPart + frac.slice(0, 2));
  if (frac[2] >= "5") cents += 1n;
  if (cents === 0n) neg = false;
  const digits = cents.toString().padStart(3, "0");
  return (neg ? "-" : "") + digits.slice(0, -2) + "." + digits.slice(-2);
}

// plainDigits writes a number's shortest round-trip digits without an exponent (1e-7 -> 0.0000001).
function plainDigits(x) {
  const s = String(x);
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, whole, frac = "", exp] = m;
  const digits = whole + frac;
  const point = whole.length + Number(exp);
  if (point <= 0) return sign + "0." + "0".repeat(-point) + digits;
  if (point >= digits.length) return sign + digits + "0".repeat(point - digits.length);
  return sign + digits.slice(0, point) + "." + digits.slice(point);
}

// formatFloat formats one float value.
function formatFloat(x) {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  return roundDecimal(plainDigits(x));
}

function escapeString(s) {
  return s.replace(/[\\|\r\n]/g, (c) => ({ "\\": "\\\\", "|": "\\|", "\r": "\\r", "\n": "\\n" })[c]);
}

const isFloat = (dt) => dt.equals(pl.Float64) || dt.equals(pl.Float32);
const isDecimal = (dt) => dt.variant === "Decimal";
const isString = (dt) => dt.equals(pl.String) || dt.variant === "Categorical";

// columnStrings renders one column of a result as canonical field strings.
function columnStrings(series) {
  const dt = series.dtype;
  if (isFloat(dt)) {
    return series.toArray().map((v) => (v === null ? "NULL" : formatFloat(v)));
  }
  if (dt.variant === "Datetime") {
    throw new Error(`column ${series.name}: a Datetime has no canonical form; cast it to a Date`);
  }
  // Integers, decimals (exact digits), dates (ISO), booleans and strings as Polars renders them.
  const values = series.cast(pl.String).toArray();
  if (isDecimal(dt)) return values.map((v) => (v === null ? "NULL" : roundDecimal(v)));
  if (isString(dt)) return values.map((v) => (v === null ? "NULL" : escapeString(v)));
  return values.map((v) => (v === null ? "NULL" : v));
}

// formatRows renders a DataFrame as canonical lines, in its column order.
function formatRows(df) {
  const cols = df.getColumns().map(columnStrings);
  const lines = new Array(df.height);
  for (let r = 0; r < df.height; r++) {
    lines[r] = cols.map((c) => c[r]).join("|");
  }
  return lines;
}

module.exports = { roundDecimal, plainDigits, formatFloat, escapeString, formatRows };
