# PDS-H q7, volume shipping (NATION1 = FRANCE, NATION2 = GERMANY), in Polars' lazy API: the two
# directions as two join chains, concatenated.
def query(t):
    france = t["nation"].filter(pl.col("n_name") == "FRANCE")
    germany = t["nation"].filter(pl.col("n_name") == "GERMANY")

    def shipping(customer_nation, supplier_nation):
        return (
            t["customer"]
            .join(customer_nation, left_on="c_nationkey", right_on="n_nationkey")
            .join(t["orders"], left_on="c_custkey", right_on="o_custkey")
            .rename({"n_name": "cust_nation"})
            .join(t["lineitem"], left_on="o_orderkey", right_on="l_orderkey")
            .join(t["supplier"], left_on="l_suppkey", right_on="s_suppkey")
            .join(supplier_nation, left_on="s_nationkey", right_on="n_nationkey")
            .rename({"n_name": "supp_nation"})
            .select("supp_nation", "cust_nation", "l_shipdate", "l_extendedprice", "l_discount")
        )

    volume = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    return (
        pl.concat([shipping(france, germany), shipping(germany, france)])
        .filter(pl.col("l_shipdate").is_between(date(1995, 1, 1), date(1996, 12, 31)))
        .with_columns(volume.alias("volume"), pl.col("l_shipdate").dt.year().alias("l_year"))
        .group_by("supp_nation", "cust_nation", "l_year")
        .agg(pl.col("volume").sum().alias("revenue"))
        .sort("supp_nation", "cust_nation", "l_year")
    )
