# PDS-H q11, important stock identification (NATION = GERMANY), in Polars' lazy API. FRACTION is the
# SF 1 value, 0.0001, as in q11.sql; the threshold is an exact decimal, as DuckDB's is.
from decimal import Decimal


def query(t):
    germany = (
        t["partsupp"]
        .join(t["supplier"], left_on="ps_suppkey", right_on="s_suppkey")
        .join(t["nation"], left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("n_name") == "GERMANY")
    )
    value = (pl.col("ps_supplycost") * pl.col("ps_availqty")).sum()
    threshold = germany.select((value.cast(pl.Decimal(38, 6)) * Decimal("0.0001")).alias("threshold"))
    return (
        germany.group_by("ps_partkey")
        .agg(value.alias("value"))
        .join(threshold, how="cross")
        .filter(pl.col("value") > pl.col("threshold"))
        .select("ps_partkey", "value")
        .sort("value", descending=True)
    )
