# PDS-H q2, the minimum cost supplier (SIZE = 15, TYPE = BRASS, REGION = EUROPE), in Polars' lazy API:
# the joined candidates once, their cheapest cost per part, and the candidates at that cost.
def query(t):
    europe = (
        t["part"]
        .join(t["partsupp"], left_on="p_partkey", right_on="ps_partkey")
        .join(t["supplier"], left_on="ps_suppkey", right_on="s_suppkey")
        .join(t["nation"], left_on="s_nationkey", right_on="n_nationkey")
        .join(t["region"], left_on="n_regionkey", right_on="r_regionkey")
        .filter(pl.col("p_size") == 15)
        .filter(pl.col("p_type").str.ends_with("BRASS"))
        .filter(pl.col("r_name") == "EUROPE")
    )
    return (
        europe.group_by("p_partkey")
        .agg(pl.col("ps_supplycost").min())
        .join(europe, on=["p_partkey", "ps_supplycost"])
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment")
        .sort("s_acctbal", "n_name", "s_name", "p_partkey", descending=[True, False, False, False])
        .head(100)
    )
