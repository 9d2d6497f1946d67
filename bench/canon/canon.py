# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""The canonical row format, in which every engine of pqcache prints a query's answer: the Python side.

The specification is the package doc of bench/canon (canon.go), which DuckDB's runner uses. This module
is its one Python twin, shared by both Python engines: bench/polars/run.py and bench/spark/run.py import
it (an engine image keeps it beside run.py; in a checkout run.py finds it here, in bench/canon), and
bench/canon's Go tests feed it and canon.go the same values. It imports nothing but the standard
library, so it runs under either engine's interpreter. An engine maps each column of a result to a kind
by its type's name (column_kind: Polars' str(dtype), Spark's DataType.simpleString()) and hands the rows
over as Python values (format_rows). One line per row, fields separated by "|", and per value:

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
by the other prints the same unless it lies within an ulp of a half cent. Both engines hand a float32
over widened to a double; it is printed from the float32's own shortest digits, as DuckDB prints one.
A timestamp (or any type the specification does not name) is an error: the query should cast it to a
date or a string.
"""

import math
import re
import struct

NULL = "NULL"
SEP = "|"
PLACES = 2

# The kinds of column the format knows, by the lower-cased name of an engine's type without its
# parameters ("decimal(15,2)" and "Decimal(precision=15, scale=2)" are decimals). Spark's names are its
# DataType.simpleString() (or typeName(): "integer"); Polars' are str(dtype). The two engines' names
# never mean different kinds: Spark's "float" is a float32, as Polars' "float32" is.
KINDS = {
    # Spark
    "byte": "int", "short": "int", "integer": "int", "long": "int",
    "tinyint": "int", "smallint": "int", "int": "int", "bigint": "int",
    "double": "float", "float": "float32", "decimal": "decimal",
    "string": "string", "varchar": "string", "char": "string",
    "date": "date", "boolean": "bool",
    # Polars (decimal, string, date and boolean are spelled as Spark spells them)
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "int128": "int",
    "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int", "uint128": "int",
    "float64": "float", "float32": "float32", "categorical": "string", "enum": "string",
}

_EXPONENT = re.compile(r"^(-?)(\d+)(?:\.(\d+))?e([+-]?\d+)$", re.IGNORECASE)
_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "\r": "\\r", "\n": "\\n"})


def column_kind(name, type_name):
    """The kind of a result column from its engine's type name, or raise for a type with no canonical
    form (a timestamp: Spark's timestamp and timestamp_ntz, Polars' Datetime)."""
    base = type_name.split("(", 1)[0].strip().lower()
    kind = KINDS.get(base)
    if kind is None:
        if base.startswith(("timestamp", "datetime")):
            raise ValueError(f"column {name}: a timestamp ({type_name}) has no canonical form; cast it to a date or a string")
        raise ValueError(f"column {name}: type {type_name} has no canonical form; cast it to a number, a date or a string")
    return kind


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


def _special(x):
    """NaN and the infinities, spelled as the format wants; None for a finite number."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return None


def format_float(x):
    """Format a float64 from its shortest round-trip digits (Python's repr), rounded to two places."""
    return _special(x) or round_decimal(plain_digits(repr(float(x))))


def shortest_float32(x):
    """The shortest digits that read back as the same float32 as x (a float32 widened to a double)."""
    bits = struct.pack("<f", x)
    x = struct.unpack("<f", bits)[0]
    for precision in range(1, 10):
        s = f"{x:.{precision}g}"
        if struct.pack("<f", float(s)) == bits:
            return s
    return repr(x)


def format_float32(x):
    """Format a float32 (handed over widened to a double) from its own shortest digits."""
    return _special(x) or round_decimal(plain_digits(shortest_float32(x)))


def format_decimal(d):
    """Format a decimal.Decimal from its exact digits (plain notation, never an exponent)."""
    return round_decimal(format(d, "f"))


def escape_string(s):
    """Escape the separator, the backslash and line breaks of a string."""
    return s.translate(_ESCAPES)


FORMATTERS = {
    "int": lambda v: str(int(v)),
    "float": format_float,
    "float32": format_float32,
    "decimal": format_decimal,
    "string": lambda v: escape_string(str(v)),
    "date": lambda v: v.isoformat(),
    "bool": lambda v: "true" if v else "false",
}


def format_rows(rows, kinds):
    """Yield rows (sequences of Python values, in the query's column order) as canonical lines, without
    the newline; kinds are the columns' kinds (column_kind)."""
    fmts = [FORMATTERS[k] for k in kinds]
    for row in rows:
        yield SEP.join(NULL if v is None else f(v) for f, v in zip(fmts, row))
