# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""The canonical row format, in which every engine of pqcache prints a query's answer: Spark's side.

The specification is the package doc of bench/canon (canon.go), which DuckDB's runner uses;
bench/polars/canon.py is its twin for Polars, and this module the one for Spark, with the same rules
and the same spelling of every value (bench/spark's Go tests feed it and bench/canon the same values).
It needs neither PySpark nor a JVM: run.py maps each column of a result's schema to a kind
(column_kind) and hands the collected rows over as Python values. One line per row, fields separated
by "|", and per value:

    null      NULL
    integer   its decimal digits                             42, -7
    decimal   its exact digits rounded to 2 places           1234.57
    float     its shortest round-trip digits, then rounded
              to 2 places (NaN, Infinity, -Infinity)          0.33
    date      YYYY-MM-DD                                     1995-03-15
    string    as is, with \\ | CR LF escaped as \\\\ \\| \\r \\n   Customer#000000001
    boolean   true, false

Rounding is half away from zero on the decimal digits (2.345 -> 2.35, -2.345 -> -2.35), and a value
that rounds to zero prints without a sign (0.00). Spark hands a FloatType value to Python widened to a
double; it is printed from the float32's own shortest digits, as the other engines print a float32. A
timestamp (or any type the specification does not name) is an error: the query should cast it to a
date or a string.
"""

import math
import re
import struct

NULL = "NULL"
SEP = "|"
PLACES = 2

# The kinds of column the format knows, from Spark's type names (DataType.simpleString(), or its
# typeName(): "int" or "integer").
KINDS = {
    "byte": "int", "short": "int", "integer": "int", "long": "int",
    "tinyint": "int", "smallint": "int", "int": "int", "bigint": "int",
    "double": "float", "float": "float32", "decimal": "decimal",
    "string": "string", "varchar": "string", "char": "string",
    "date": "date", "boolean": "bool",
}

_EXPONENT = re.compile(r"^(-?)(\d+)(?:\.(\d+))?e([+-]?\d+)$", re.IGNORECASE)
_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "\r": "\\r", "\n": "\\n"})


def column_kind(name, type_name):
    """The kind of a result column from its Spark type name ("decimal(15,2)" is a decimal), or raise
    for a type with no canonical form."""
    base = type_name.split("(", 1)[0].strip().lower()
    kind = KINDS.get(base)
    if kind is None:
        if base.startswith("timestamp"):
            raise ValueError(f"column {name}: a timestamp has no canonical form; cast it to a date or a string")
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
