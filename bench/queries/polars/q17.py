# PDS-H q17, small-quantity-order revenue (BRAND = Brand#23, CONTAINER = MED BOX), in Polars' lazy
# API: the correlated average as a group-by joined back to the lines. Averages are floats, as in
# DuckDB; the yearly figure is an exact sum divided as a float, NULL when no line is left.
def query(t):
    lines = (
        t["part"]
        .filter(pl.col("p_brand") == "Brand#23")
        .filter(pl.col("p_container") == "MED BOX")
        .join(t["lineitem"], left_on="p_partkey", right_on="l_partkey")
    )
    yearly = pl.col("l_extendedprice").sum().cast(pl.Float64) / 7.0
    return (
        lines.group_by("p_partkey")
        .agg((0.2 * pl.col("l_quantity").mean()).alias("avg_quantity"))
        .select(pl.col("p_partkey").alias("key"), "avg_quantity")
        .join(lines, left_on="key", right_on="p_partkey")
        .filter(pl.col("l_quantity").cast(pl.Float64) < pl.col("avg_quantity"))
        .select(pl.when(pl.len() > 0).then(yearly).alias("avg_yearly"))
    )
