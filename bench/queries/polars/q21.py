# PDS-H q21, suppliers who kept orders waiting (NATION = SAUDI ARABIA), in Polars' lazy API: orders
# with more than one supplier, joined to their late lines, keeping the lines whose supplier was the
# only late one. Suppliers are counted distinct, as the EXISTS clauses of q21.sql count them.
def query(t):
    late = (
        t["lineitem"]
        .group_by("l_orderkey")
        .agg(pl.col("l_suppkey").n_unique().alias("n_supp_by_order"))
        .filter(pl.col("n_supp_by_order") > 1)
        .join(t["lineitem"].filter(pl.col("l_receiptdate") > pl.col("l_commitdate")), on="l_orderkey")
    )
    return (
        late.group_by("l_orderkey")
        .agg(pl.col("l_suppkey").n_unique().alias("n_supp_by_order"))
        .join(late, on="l_orderkey")
        .join(t["supplier"], left_on="l_suppkey", right_on="s_suppkey")
        .join(t["nation"], left_on="s_nationkey", right_on="n_nationkey")
        .join(t["orders"], left_on="l_orderkey", right_on="o_orderkey")
        .filter(pl.col("n_supp_by_order") == 1)
        .filter(pl.col("n_name") == "SAUDI ARABIA")
        .filter(pl.col("o_orderstatus") == "F")
        .group_by("s_name")
        .agg(pl.len().alias("numwait"))
        .sort("numwait", "s_name", descending=[True, False])
        .head(100)
    )
