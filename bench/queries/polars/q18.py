# PDS-H q18, large volume customer (QUANTITY = 300), in Polars' lazy API: the IN subquery as a semi
# join to the orders whose lines sum past the quantity.
def query(t):
    big_orders = (
        t["lineitem"]
        .group_by("l_orderkey")
        .agg(pl.col("l_quantity").sum().alias("sum_quantity"))
        .filter(pl.col("sum_quantity") > 300)
    )
    return (
        t["orders"]
        .join(big_orders, left_on="o_orderkey", right_on="l_orderkey", how="semi")
        .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
        .join(t["customer"], left_on="o_custkey", right_on="c_custkey")
        .group_by("c_name", "o_custkey", "o_orderkey", "o_orderdate", "o_totalprice")
        .agg(pl.col("l_quantity").sum().alias("sum_quantity"))
        .select("c_name", pl.col("o_custkey").alias("c_custkey"), "o_orderkey", "o_orderdate", "o_totalprice", "sum_quantity")
        .sort("o_totalprice", "o_orderdate", descending=[True, False])
        .head(100)
    )
