#!/usr/bin/env bash
# The released Pulsar jars for the real-cluster lab (realcluster/): Maven resolves realcluster/pom.xml
# from Maven Central only (realcluster/settings.xml) into ~/.m2 and writes the class path to
# realcluster/target/classpath.txt. Installs Maven from apt when it is missing.
set -eu
cd "$(dirname "$0")/.."
if ! command -v mvn >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || { echo "realcluster-deps: please install Maven (mvn)" >&2; exit 1; }
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  echo "realcluster-deps: installing maven" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q maven >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q maven >/dev/null; }
fi
mkdir -p realcluster/target
echo "realcluster-deps: resolving org.apache.pulsar:pulsar-broker (realcluster/pom.xml)" >&2
mvn -q -B -s realcluster/settings.xml -f realcluster/pom.xml dependency:build-classpath \
    -Dmdep.outputFile="$PWD/realcluster/target/classpath.txt.new"
mv realcluster/target/classpath.txt.new realcluster/target/classpath.txt
