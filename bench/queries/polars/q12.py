# PDS-H q12, shipping modes and order priority (SHIPMODE1 = MAIL, SHIPMODE2 = SHIP, DATE = 1994-01-01),
# in Polars' lazy API.
def query(t):
    high = pl.col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"])
    return (
        t["orders"]
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .filter(pl.col("l_shipmode").is_in(["MAIL", "SHIP"]))
        .filter(pl.col("l_commitdate") < pl.col("l_receiptdate"))
        .filter(pl.col("l_shipdate") < pl.col("l_commitdate"))
        .filter(pl.col("l_receiptdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left"))
        .with_columns(
            pl.when(high).then(1).otherwise(0).alias("high_line_count"),
            pl.when(~high).then(1).otherwise(0).alias("low_line_count"),
        )
        .group_by("l_shipmode")
        .agg(pl.col("high_line_count").sum(), pl.col("low_line_count").sum())
        .sort("l_shipmode")
    )
