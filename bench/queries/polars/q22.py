# PDS-H q22, global sales opportunity (I1..I7 = 13, 31, 23, 29, 30, 18, 17), in Polars' lazy API: the
# average balance as a one-row frame crossed with the candidates, and NOT EXISTS as an anti join.
def query(t):
    candidates = (
        t["customer"]
        .with_columns(pl.col("c_phone").str.slice(0, 2).alias("cntrycode"))
        .filter(pl.col("cntrycode").is_in(["13", "31", "23", "29", "30", "18", "17"]))
        .select("c_acctbal", "c_custkey", "cntrycode")
    )
    average = candidates.filter(pl.col("c_acctbal") > 0).select(pl.col("c_acctbal").mean().alias("avg_acctbal"))
    return (
        candidates.join(t["orders"], left_on="c_custkey", right_on="o_custkey", how="anti")
        .join(average, how="cross")
        .filter(pl.col("c_acctbal").cast(pl.Float64) > pl.col("avg_acctbal"))
        .group_by("cntrycode")
        .agg(pl.col("c_acctbal").count().alias("numcust"), pl.col("c_acctbal").sum().alias("totacctbal"))
        .sort("cntrycode")
    )
