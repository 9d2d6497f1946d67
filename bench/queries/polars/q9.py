# PDS-H q9, product type profit measure (COLOR = green), in Polars' lazy API.
def query(t):
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    cost = pl.col("ps_supplycost").cast(pl.Decimal(38, 4)) * pl.col("l_quantity")
    return (
        t["lineitem"]
        .join(t["supplier"], left_on="l_suppkey", right_on="s_suppkey")
        .join(t["partsupp"], left_on=["l_suppkey", "l_partkey"], right_on=["ps_suppkey", "ps_partkey"])
        .join(t["part"], left_on="l_partkey", right_on="p_partkey")
        .join(t["orders"], left_on="l_orderkey", right_on="o_orderkey")
        .join(t["nation"], left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("p_name").str.contains("green"))
        .select(
            pl.col("n_name").alias("nation"),
            pl.col("o_orderdate").dt.year().alias("o_year"),
            (revenue - cost).alias("amount"),
        )
        .group_by("nation", "o_year")
        .agg(pl.col("amount").sum().alias("sum_profit"))
        .sort("nation", "o_year", descending=[False, True])
    )
