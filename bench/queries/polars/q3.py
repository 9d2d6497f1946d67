# PDS-H q3, shipping priority (SEGMENT = BUILDING, DATE = 1995-03-15), in Polars' lazy API.
def query(t):
    cutoff = date(1995, 3, 15)
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    return (
        t["customer"]
        .filter(pl.col("c_mktsegment") == "BUILDING")
        .join(t["orders"], left_on="c_custkey", right_on="o_custkey")
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .filter(pl.col("o_orderdate") < cutoff)
        .filter(pl.col("l_shipdate") > cutoff)
        .with_columns(revenue.alias("revenue"))
        .group_by("o_orderkey", "o_orderdate", "o_shippriority")
        .agg(pl.col("revenue").sum())
        .select(pl.col("o_orderkey").alias("l_orderkey"), "revenue", "o_orderdate", "o_shippriority")
        .sort("revenue", "o_orderdate", descending=[True, False])
        .head(10)
    )
