"""A Spark executor's entrypoint in pqcache's Spark image, the command of the executors' pod template.

Spark's Kubernetes scheduler starts each executor pod with the argument "executor" and describes the
executor in the environment (SPARK_DRIVER_URL, SPARK_EXECUTOR_ID, ...). This program turns that into
the JVM's command line and replaces itself with the JVM, so that the executor is the container's main
process and its cgroup holds the executor alone. With AWS_CA_BUNDLE (a Dataset's CA bundle) it first
writes a trust store holding the JRE's CAs and the bundle's, which s3a's TLS then trusts.
"""

import os
import subprocess
import sys

PROGRAM = os.path.dirname(os.path.abspath(__file__))
JAVA_HOME = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")


def classpath():
    """pyspark's jars (Spark and its Kubernetes scheduler) and s3a's, as the driver has them."""
    import pyspark  # the venv's; only its location is needed

    jars = [os.path.join(os.path.dirname(pyspark.__file__), "jars", "*"), os.path.join(PROGRAM, "jars", "*")]
    extra = os.environ.get("SPARK_CLASSPATH", "")
    return ":".join([p for p in [extra] if p] + jars)


def truststore(bundle, out):
    """Writes a PKCS12 trust store at out: the JRE's CAs and every certificate of the PEM bundle."""
    keytool = os.path.join(JAVA_HOME, "bin", "keytool")
    cacerts = os.path.join(JAVA_HOME, "lib", "security", "cacerts")
    subprocess.run([keytool, "-importkeystore", "-noprompt", "-srckeystore", cacerts, "-srcstorepass", "changeit",
                    "-destkeystore", out, "-deststoretype", "PKCS12", "-deststorepass", "changeit"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(bundle) as f:
        pems = f.read().split("-----END CERTIFICATE-----")
    for i, pem in enumerate(p for p in pems if "-----BEGIN CERTIFICATE-----" in p):
        path = out + ".%d.pem" % i
        with open(path, "w") as f:
            f.write(pem.strip() + "\n-----END CERTIFICATE-----\n")
        subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "pqcache-ca-%d" % i, "-file", path,
                        "-keystore", out, "-storetype", "PKCS12", "-storepass", "changeit"],
                       check=True, stdout=subprocess.DEVNULL)
    return ["-Djavax.net.ssl.trustStore=" + out, "-Djavax.net.ssl.trustStorePassword=changeit",
            "-Djavax.net.ssl.trustStoreType=PKCS12"]


def command(env):
    """The executor's JVM command from the environment Spark gave its pod."""
    opts = [env[k] for k in sorted((k for k in env if k.startswith("SPARK_JAVA_OPT_")),
                                   key=lambda k: int(k[len("SPARK_JAVA_OPT_"):]))]
    if env.get("AWS_CA_BUNDLE"):
        opts += truststore(env["AWS_CA_BUNDLE"], os.path.join(env.get("TMPDIR", "/tmp"), "pqcache-truststore.p12"))
    mem = env["SPARK_EXECUTOR_MEMORY"]
    return [os.path.join(JAVA_HOME, "bin", "java"), *opts, "-Xms" + mem, "-Xmx" + mem, "-cp", classpath(),
            "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
            "--driver-url", env["SPARK_DRIVER_URL"], "--executor-id", env["SPARK_EXECUTOR_ID"],
            "--cores", env["SPARK_EXECUTOR_CORES"], "--app-id", env["SPARK_APPLICATION_ID"],
            "--hostname", env["SPARK_EXECUTOR_POD_IP"], "--resourceProfileId", env.get("SPARK_RESOURCE_PROFILE_ID", "0"),
            "--podName", env["SPARK_EXECUTOR_POD_NAME"]]


def main():
    if sys.argv[1:2] != ["executor"]:
        sys.exit("executor.py starts a Spark executor: Spark's scheduler passes the argument 'executor', got %r" % sys.argv[1:])
    cmd = command(os.environ)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
