# PDS-H q6, forecasting revenue change (DATE = 1994-01-01, DISCOUNT = 0.06, QUANTITY = 24), in
# Polars' lazy API. SQL's SUM over no rows is NULL, not 0: the sum is taken only when rows are left.
def query(t):
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * pl.col("l_discount")
    return (
        t["lineitem"]
        .filter(pl.col("l_shipdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left"))
        .filter(pl.col("l_discount").is_between(0.05, 0.07))
        .filter(pl.col("l_quantity") < 24)
        .select(pl.when(pl.len() > 0).then(revenue.sum()).alias("revenue"))
    )
