# PDS-H q14, promotion effect (DATE = 1995-09-01), in Polars' lazy API. Exact sums, divided as floats
# as DuckDB divides them; NULL, as SQL's SUM, when no line is left.
def query(t):
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    promo = pl.when(pl.col("p_type").str.starts_with("PROMO")).then(revenue).otherwise(0)
    share = (100 * promo.sum()).cast(pl.Float64) / revenue.sum().cast(pl.Float64)
    return (
        t["lineitem"]
        .join(t["part"], left_on="l_partkey", right_on="p_partkey")
        .filter(pl.col("l_shipdate").is_between(date(1995, 9, 1), date(1995, 10, 1), closed="left"))
        .select(pl.when(pl.len() > 0).then(share).alias("promo_revenue"))
    )
