# PDS-H q1, the pricing summary report, in Polars' lazy API.
# Money is DECIMAL(15,2), and a decimal product keeps the larger scale of its factors, so prices are
# widened before they are multiplied: the sums are exact, as DuckDB's are.
def query(t):
    price = pl.col("l_extendedprice")
    disc_price = price.cast(pl.Decimal(38, 4)) * (1 - pl.col("l_discount"))
    charge = price.cast(pl.Decimal(38, 6)) * (1 - pl.col("l_discount")) * (1 + pl.col("l_tax"))
    return (
        t["lineitem"]
        .filter(pl.col("l_shipdate") <= date(1998, 9, 2))
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            price.sum().alias("sum_base_price"),
            disc_price.sum().alias("sum_disc_price"),
            charge.sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            price.mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )
