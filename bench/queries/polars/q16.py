# PDS-H q16, parts/supplier relationship (BRAND = Brand#45, TYPE = MEDIUM POLISHED, SIZES = 49, 14,
# 23, 45, 19, 3, 36, 9), in Polars' lazy API: the NOT IN of the specification as an anti join.
def query(t):
    complainers = t["supplier"].filter(pl.col("s_comment").str.contains("Customer.*Complaints")).select("s_suppkey")
    return (
        t["part"]
        .join(t["partsupp"], left_on="p_partkey", right_on="ps_partkey")
        .filter(pl.col("p_brand") != "Brand#45")
        .filter(~pl.col("p_type").str.starts_with("MEDIUM POLISHED"))
        .filter(pl.col("p_size").is_in([49, 14, 23, 45, 19, 3, 36, 9]))
        .join(complainers, left_on="ps_suppkey", right_on="s_suppkey", how="anti")
        .group_by("p_brand", "p_type", "p_size")
        .agg(pl.col("ps_suppkey").n_unique().alias("supplier_cnt"))
        .sort("supplier_cnt", "p_brand", "p_type", "p_size", descending=[True, False, False, False])
    )
