# PDS-H q20, potential part promotion (COLOR = forest, DATE = 1994-01-01, NATION = CANADA), in
# Polars' lazy API: half the quantity shipped is an exact decimal, as DuckDB's 0.5 * sum(...) is.
from decimal import Decimal


def query(t):
    shipped = (
        t["lineitem"]
        .filter(pl.col("l_shipdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left"))
        .group_by("l_partkey", "l_suppkey")
        .agg((pl.col("l_quantity").sum().cast(pl.Decimal(38, 3)) * Decimal("0.5")).alias("sum_quantity"))
    )
    canada = t["supplier"].join(
        t["nation"].filter(pl.col("n_name") == "CANADA"), left_on="s_nationkey", right_on="n_nationkey"
    )
    return (
        t["part"]
        .filter(pl.col("p_name").str.starts_with("forest"))
        .select(pl.col("p_partkey").unique())
        .join(t["partsupp"], left_on="p_partkey", right_on="ps_partkey")
        .join(shipped, left_on=["ps_suppkey", "p_partkey"], right_on=["l_suppkey", "l_partkey"])
        .filter(pl.col("ps_availqty") > pl.col("sum_quantity"))
        .select(pl.col("ps_suppkey").unique())
        .join(canada, left_on="ps_suppkey", right_on="s_suppkey")
        .select("s_name", "s_address")
        .sort("s_name")
    )
