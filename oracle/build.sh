#!/usr/bin/env bash
# Build the oracle for every release line (or those named): Maven resolves the line's pulsar-broker and the
# few libraries the driver loads from Maven Central into ~/.m2, compiles our driver against them into
# target/VERSION/classes and writes target/VERSION/classpath.txt. A line already built from the current
# pom and sources (every file under src/) is skipped.
set -euo pipefail
cd "$(dirname "$0")"
command -v mvn >/dev/null || { echo "oracle: Maven (mvn) is needed: apt-get install maven" >&2; exit 1; }
command -v javac >/dev/null || { echo "oracle: a JDK 17+ (javac) is needed: apt-get install openjdk-17-jdk-headless" >&2; exit 1; }
# line -> pulsar-broker version (4.1: Maven Central serves no 4.1.x)
declare -A LINES=([3.0]=3.0.7 [3.3]=3.3.6 [4.0]=4.0.8 [4.2]=4.2.4 [5.0]=5.0.1)
want=("$@"); [ ${#want[@]} -eq 0 ] && want=(3.0 3.3 4.0 4.2 5.0)
for line in "${want[@]}"; do
  v=${LINES[$line]:-}
  [ -n "$v" ] || { echo "oracle: no reference version for line $line" >&2; exit 1; }
  out=target/$v
  if [ -f "$out/classpath.txt" ] && [ -f "$out/classes/org/shedlab/oracle/Driver.class" ] \
     && [ "$out/classpath.txt" -nt pom.xml ] \
     && [ -z "$(find src -newer "$out/classes/org/shedlab/oracle/Driver.class" -print -quit)" ]; then
    continue
  fi
  extra=()
  case $v in 3.0.*) ;; *) extra=(-Dotel) ;; esac
  jh=${JAVA_HOME:-}
  case $v in 5.*)  # Pulsar 5's classes are Java 21 class files
    jh=$(./java21.sh home) || { echo "oracle: line $line needs a JDK 21+ (none found): not built" >&2; continue; } ;;
  esac
  echo "oracle: building line $line (pulsar-broker $v)" >&2
  rm -f "$out/classpath.txt"
  JAVA_HOME=$jh mvn -B -q -Pline-$line "${extra[@]}" dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" compile >&2
done
