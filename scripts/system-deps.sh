#!/usr/bin/env bash
# Install the system packages Shedlab's tests need when they are missing:
# Chromium + chromedriver (browser tests, Kaleido image export), a Java 17+ runtime (Spark), and a JDK and Maven
# (the oracle: Pulsar's own classes checking the engine, oracle/build.sh).
# Uses apt-get (Debian/Ubuntu); elsewhere, prints what to install and exits 0 so the caller decides.
set -u
java_only=0; [ "${1:-}" = "--java-only" ] && java_only=1
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
# the oracle's build (oracle/build.sh): a JDK and Maven
if [ $java_only -eq 0 ]; then
  command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || need+=(maven)
fi
if [ $java_only -eq 0 ]; then
  [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: please install: ${need[*]}" >&2; exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
echo "system-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
  $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q "${need[@]}" >/dev/null
}
