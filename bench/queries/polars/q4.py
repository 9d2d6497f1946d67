# PDS-H q4, order priority checking (DATE = 1993-07-01), in Polars' lazy API: the EXISTS of the
# specification as a join to the late lines, counted once per order.
def query(t):
    return (
        t["lineitem"]
        .join(t["orders"], left_on="l_orderkey", right_on="o_orderkey")
        .filter(pl.col("o_orderdate").is_between(date(1993, 7, 1), date(1993, 10, 1), closed="left"))
        .filter(pl.col("l_commitdate") < pl.col("l_receiptdate"))
        .unique(subset=["o_orderpriority", "l_orderkey"])
        .group_by("o_orderpriority")
        .agg(pl.len().alias("order_count"))
        .sort("o_orderpriority")
    )
