#!/usr/bin/env bash
# The real Helm engine for the chart test: helm-java (Helm's native library bundled) from Maven Central.
#   scripts/helm-java.sh fetch   copy the jars into .helm-java/libs (once per version)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/test/charts/helm/pom.xml"
LIBS="$ROOT/.helm-java/libs"
VERSION="$(sed -n 's:.*<helm-java.version>\(.*\)</helm-java.version>.*:\1:p' "$POM")"
case "${1:-}" in
  fetch)
    [ -f "$LIBS/.complete-$VERSION" ] && exit 0
    command -v mvn >/dev/null || { echo "helm-java.sh: Maven is missing (apt-get install maven)" >&2; exit 1; }
    echo "helm-java.sh: fetching helm-java $VERSION from Maven Central into $LIBS"
    rm -rf "$LIBS" && mkdir -p "$LIBS"
    mvn -q -B -f "$POM" dependency:copy-dependencies -DoutputDirectory="$LIBS" -DincludeScope=runtime
    touch "$LIBS/.complete-$VERSION"
    ;;
  *) echo "usage: scripts/helm-java.sh fetch" >&2; exit 2 ;;
esac
