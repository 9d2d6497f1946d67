# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""The canonical row format, in which every engine of pqcache prints a query's answer.

The specification is the package doc of bench/canon (canon.go), which DuckDB's runner uses; this
module is its Python twin for Polars, and bench/polars's Go tests feed both the same values. One line
per row, fields separated by "|", and per value:

    null      NULL
    integer   its decimal digits                             42, -7
    decimal   its exact digits rounded to 2 places           1234.57
    float     its shortest round-trip digits, then rounded
              to 2 places (NaN, Infinity, -Infinity)          0.33
    date      YYYY-MM-DD                                     1995-03-15
    string    as is, with \\ | CR LF escaped as \\\\ \\| \\r \\n   Customer#000000001
    boolean   true, false

Rounding is half away from zero on the decimal digits (2.345 -> 2.35, -2.345 -> -2.35), and a value
that rounds to zero prints without a sign (0.00). Decimals are rounded from their exact digits and
floats from their shortest digits, so the same number computed exactly by one engine and as a float
by the other prints the same unless it lies within an ulp of a half cent. A Datetime (or any type the
specification does not name) is an error: the query should cast it to a Date or a String.
"""

import math
import re

import polars as pl

NULL = "NULL"
SEP = "|"
PLACES = 2

_EXPONENT = re.compile(r"^(-?)(\d+)(?:\.(\d+))?e([+-]?\d+)$", re.IGNORECASE)
_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "\r": "\\r", "\n": "\\n"})


def round_decimal(s):
    """Round a plain decimal string ("-123.4567", "17", ".5") to two places, half away from zero.

    The work is done on the digits, never through a float, so an exact decimal keeps its value.
    """
    neg = s.startswith("-")
    s = s.lstrip("+-")
    whole, _, frac = s.partition(".")
    frac = frac.ljust(PLACES + 1, "0")
    cents = int((whole or "0") + frac[:PLACES])
    if frac[PLACES] >= "5":
        cents += 1
    if cents == 0:
        neg = False
    digits = str(cents).rjust(PLACES + 1, "0")
    return ("-" if neg else "") + digits[:-PLACES] + "." + digits[-PLACES:]


def plain_digits(s):
    """Write a number's digits ("1e-07", "1.5e+21") without an exponent ("0.0000001", "1500...0")."""
    m = _EXPONENT.match(s)
    if not m:
        return s
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or "", int(m.group(4))
    digits = whole + frac
    point = len(whole) + exp
    if point <= 0:
        return sign + "0." + "0" * -point + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


def format_float(x):
    """Format a float64 from its shortest round-trip digits (Python's repr), rounded to two places."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return round_decimal(plain_digits(repr(x)))


def format_float_digits(s):
    """Format a float written as its shortest digits by Polars (how a Float32 keeps its own)."""
    low = s.lower()
    if low == "nan":
        return "NaN"
    if low in ("inf", "+inf", "infinity"):
        return "Infinity"
    if low in ("-inf", "-infinity"):
        return "-Infinity"
    return round_decimal(plain_digits(s))


def escape_string(s):
    """Escape the separator, the backslash and line breaks of a string."""
    return s.translate(_ESCAPES)


def _null_or(fn, values):
    """Apply fn to each value that is not None; None prints as NULL."""
    return [NULL if v is None else fn(v) for v in values]


def column_strings(series):
    """Render one result column as canonical field strings, or raise for a type with no canonical form."""
    dt = series.dtype
    if dt == pl.Float64:
        return _null_or(format_float, series.to_list())
    if dt == pl.Float32:
        # Polars writes a Float32's own shortest digits; as a Python float it would gain digits.
        return _null_or(format_float_digits, series.cast(pl.String).to_list())
    if isinstance(dt, pl.Decimal):
        # Polars writes a decimal's exact digits, in plain notation.
        return _null_or(round_decimal, series.cast(pl.String).to_list())
    if dt.is_integer() or dt == pl.Date:
        return _null_or(str, series.cast(pl.String).to_list())
    if dt == pl.Boolean:
        return _null_or(lambda b: "true" if b else "false", series.to_list())
    if dt in (pl.String, pl.Categorical) or isinstance(dt, (pl.Categorical, pl.Enum)):
        return _null_or(escape_string, series.cast(pl.String).to_list())
    if isinstance(dt, pl.Datetime):
        raise ValueError(f"column {series.name}: a Datetime has no canonical form; cast it to a Date or a String")
    raise ValueError(f"column {series.name}: type {dt} has no canonical form; cast it to a number, a Date or a String")


def format_rows(df):
    """Yield a DataFrame's rows as canonical lines (without the newline), in its column order."""
    columns = [column_strings(s) for s in df.get_columns()]
    for fields in zip(*columns):
        yield SEP.join(fields)
