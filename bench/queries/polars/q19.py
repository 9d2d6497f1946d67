# PDS-H q19, discounted revenue (BRAND1..3 = Brand#12, #23, #34; QUANTITY1..3 = 1, 10, 20), in Polars'
# lazy API: the three kinds of line as one disjunction after the join. NULL when no line is left.
def query(t):
    def kind(brand, containers, quantity, max_size):
        return (
            (pl.col("p_brand") == brand)
            & pl.col("p_container").is_in(containers)
            & pl.col("l_quantity").is_between(quantity, quantity + 10)
            & pl.col("p_size").is_between(1, max_size)
        )

    revenue = pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    return (
        t["part"]
        .join(t["lineitem"], left_on="p_partkey", right_on="l_partkey")
        .filter(pl.col("l_shipmode").is_in(["AIR", "AIR REG"]))
        .filter(pl.col("l_shipinstruct") == "DELIVER IN PERSON")
        .filter(
            kind("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
            | kind("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
            | kind("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15)
        )
        .select(pl.when(pl.len() > 0).then(revenue.sum()).alias("revenue"))
    )
