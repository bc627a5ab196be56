#!/usr/bin/env bash
# Print the home (`java21.sh home`) or java binary (`java21.sh java`) of a JDK 21 or newer: $SHEDLAB_ORACLE_JDK21,
# else the first /usr/lib/jvm/* with a javac of release 21+. Exit 1 when there is none.
set -u
for h in ${SHEDLAB_ORACLE_JDK21:-} /usr/lib/jvm/*; do
  [ -x "$h/bin/javac" ] || continue
  r=$("$h/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
  case "$r" in ''|1.*|1[0-9]|20) continue ;; esac
  if [ "${1:-home}" = java ]; then echo "$h/bin/java"; else echo "$h"; fi
  exit 0
done
exit 1
