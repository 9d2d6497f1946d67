# PDS-H q15, top supplier (DATE = 1996-01-01), in Polars' lazy API: the revenue view as a LazyFrame,
# and the suppliers whose revenue equals its maximum (exact decimals compare exactly).
def query(t):
    revenue = (
        t["lineitem"]
        .filter(pl.col("l_shipdate").is_between(date(1996, 1, 1), date(1996, 4, 1), closed="left"))
        .group_by("l_suppkey")
        .agg((pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))).sum().alias("total_revenue"))
        .select(pl.col("l_suppkey").alias("supplier_no"), "total_revenue")
    )
    return (
        t["supplier"]
        .join(revenue, left_on="s_suppkey", right_on="supplier_no")
        .filter(pl.col("total_revenue") == pl.col("total_revenue").max())
        .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
        .sort("s_suppkey")
    )
