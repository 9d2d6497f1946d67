# Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.
"""What Spark counts of the bytes it reads over s3a, with Parquet's vectored reads on and off.

    python spark-s3-bytes.py ENDPOINT URL JARS_DIR true|false

Scans three columns of one Parquet file at URL (s3a://...) in local mode and prints the executors' task
input bytes (what pqcache's Spark engine reports as s3ReadBytes) and s3a's global bytesRead counter.
hack/bench/spark-s3-bytes.sh runs it against versitygw.
"""
import sys

from pyspark.sql import SparkSession

endpoint, url, jars, vectored = sys.argv[1:5]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraClassPath", jars + "/*")
         .config("spark.hadoop.fs.s3a.endpoint", endpoint)
         .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
         .config("spark.hadoop.fs.s3a.path.style.access", "true")
         .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
         .config("spark.hadoop.parquet.hadoop.vectored.io.enabled", vectored)
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(url).selectExpr("sum(l_extendedprice * l_discount)", "count(*)", "max(l_comment)").collect()
executors = spark.sparkContext._jsc.sc().statusStore().executorList(False)
task_input = sum(executors.apply(i).totalInputBytes() for i in range(executors.size()))
s3a = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getGlobalStorageStatistics().get("s3a")
print(f"vectored={vectored} task_input_bytes={task_input} s3a_bytes_read={s3a.getLong('bytesRead') if s3a else 0}", flush=True)
spark.stop()
