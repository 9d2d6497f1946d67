# PDS-H q5, local supplier volume (REGION = ASIA, DATE = 1994-01-01), in Polars' lazy API: customer
# and supplier of the same nation, joined on both keys at once.
def query(t):
    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    return (
        t["region"]
        .join(t["nation"], left_on="r_regionkey", right_on="n_regionkey")
        .join(t["customer"], left_on="n_nationkey", right_on="c_nationkey")
        .join(t["orders"], left_on="c_custkey", right_on="o_custkey")
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .join(t["supplier"], left_on=["l_suppkey", "n_nationkey"], right_on=["s_suppkey", "s_nationkey"])
        .filter(pl.col("r_name") == "ASIA")
        .filter(pl.col("o_orderdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left"))
        .with_columns(revenue.alias("revenue"))
        .group_by("n_name")
        .agg(pl.col("revenue").sum())
        .sort("revenue", descending=True)
    )
