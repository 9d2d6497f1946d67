# PDS-H q10, returned item reporting (DATE = 1993-10-01), in Polars' lazy API.
def query(t):
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    return (
        t["customer"]
        .join(t["orders"], left_on="c_custkey", right_on="o_custkey")
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .join(t["nation"], left_on="c_nationkey", right_on="n_nationkey")
        .filter(pl.col("o_orderdate").is_between(date(1993, 10, 1), date(1994, 1, 1), closed="left"))
        .filter(pl.col("l_returnflag") == "R")
        .group_by("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(revenue.sum().alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .sort("revenue", descending=True)
        .head(20)
    )
