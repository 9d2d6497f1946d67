# PDS-H q8, national market share (NATION = BRAZIL, REGION = AMERICA, TYPE = ECONOMY ANODIZED STEEL),
# in Polars' lazy API. The share is a ratio of exact sums, divided as floats as DuckDB divides them.
def query(t):
    customer_nation = t["nation"].select("n_nationkey", "n_regionkey")
    supplier_nation = t["nation"].select("n_nationkey", "n_name")
    volume = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    brazil = pl.when(pl.col("nation") == "BRAZIL").then(pl.col("volume")).otherwise(0)
    return (
        t["part"]
        .join(t["lineitem"], left_on="p_partkey", right_on="l_partkey")
        .join(t["supplier"], left_on="l_suppkey", right_on="s_suppkey")
        .join(t["orders"], left_on="l_orderkey", right_on="o_orderkey")
        .join(t["customer"], left_on="o_custkey", right_on="c_custkey")
        .join(customer_nation, left_on="c_nationkey", right_on="n_nationkey")
        .join(t["region"], left_on="n_regionkey", right_on="r_regionkey")
        .filter(pl.col("r_name") == "AMERICA")
        .join(supplier_nation, left_on="s_nationkey", right_on="n_nationkey")
        .filter(pl.col("o_orderdate").is_between(date(1995, 1, 1), date(1996, 12, 31)))
        .filter(pl.col("p_type") == "ECONOMY ANODIZED STEEL")
        .select(
            pl.col("o_orderdate").dt.year().alias("o_year"),
            volume.alias("volume"),
            pl.col("n_name").alias("nation"),
        )
        .with_columns(brazil.alias("brazil_volume"))
        .group_by("o_year")
        .agg(
            (pl.col("brazil_volume").sum().cast(pl.Float64) / pl.col("volume").sum().cast(pl.Float64))
            .alias("mkt_share")
        )
        .sort("o_year")
    )
