#!/usr/bin/env bash
# Measures the AWS SDK's Netty, CRT and URLConnection clients against one s3proxy (bench/scripts/S3Clients.java):
#   bench/scripts/s3-clients.sh [CHUNKS] [RUNS]
# Needs ./lmcache4j build first (for s3proxy-server/target/lib). Resolves the three clients (SDK 2.57.8) with Maven
# into target/s3-clients/lib; nothing here is part of lmcache4j's build or runtime.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JAVA="$("$ROOT/lmcache4j" java)/bin/java"
WORK="$ROOT/bench/target/s3-clients"
mkdir -p "$WORK"
cat > "$WORK/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>s3-clients</artifactId><version>1</version>
  <dependencyManagement><dependencies><dependency><groupId>software.amazon.awssdk</groupId><artifactId>bom</artifactId>
    <version>2.57.8</version><type>pom</type><scope>import</scope></dependency></dependencies></dependencyManagement>
  <dependencies>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>s3</artifactId></dependency>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>netty-nio-client</artifactId></dependency>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>aws-crt-client</artifactId></dependency>
    <dependency><groupId>software.amazon.awssdk</groupId><artifactId>url-connection-client</artifactId></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>2.0.16</version></dependency>
  </dependencies>
</project>
POM
(cd "$WORK" && JAVA_HOME="$("$ROOT/lmcache4j" java)" mvn -B -q -ntp dependency:copy-dependencies -DoutputDirectory=lib >&2)
DATA="$(mktemp -d /dev/shm/s3-clients-XXXXXX)"
PORT=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$DATA/data/bench"
cat > "$DATA/s3proxy.properties" <<PROPS
s3proxy.endpoint=http://127.0.0.1:$PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=lmcache4j-local
s3proxy.credential=lmcache4j-local-secret
jclouds.provider=filesystem
jclouds.filesystem.basedir=$DATA/data
PROPS
printf '<configuration><root level="WARN"/></configuration>\n' > "$DATA/logback.xml"
"$JAVA" -Xmx1g -Dlogback.configurationFile="$DATA/logback.xml" --sun-misc-unsafe-memory-access=allow \
  -cp "$ROOT/s3proxy-server/target/lib/*" org.gaul.s3proxy.Main --properties "$DATA/s3proxy.properties" >"$DATA/s3proxy.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 240); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.5; done
"$JAVA" --enable-native-access=ALL-UNNAMED -cp "$WORK/lib/*" "$ROOT/bench/scripts/S3Clients.java" \
  "http://127.0.0.1:$PORT" bench "${1:-4}" "${2:-3}"
