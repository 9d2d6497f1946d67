# PDS-H q13, customer distribution (WORD1 = special, WORD2 = requests), in Polars' lazy API: a left
# join keeps the customers without orders, whose count of order keys is 0.
def query(t):
    orders = t["orders"].filter(pl.col("o_comment").str.contains("special.*requests").not_())
    return (
        t["customer"]
        .join(orders, left_on="c_custkey", right_on="o_custkey", how="left")
        .group_by("c_custkey")
        .agg(pl.col("o_orderkey").count().alias("c_count"))
        .group_by("c_count")
        .agg(pl.len().alias("custdist"))
        .sort("custdist", "c_count", descending=[True, True])
    )
