#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, combined broker+controller) for development and tests.
#   scripts/kafka.sh fetch    download the broker jars from Maven Central (cached in .kafka/libs)
#   scripts/kafka.sh start    fetch if needed, format a fresh data dir, start in the background, wait until ready
#   scripts/kafka.sh resume   start again on the data dir and config of an earlier `start` (after a stop or
#                             a kill: an outage that keeps the data), wait until ready
#   scripts/kafka.sh stop     stop the broker this script started (by pid)
#   scripts/kafka.sh status   exit 0 when something accepts connections on the port
# Env: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093), KAFKA_HOME_DIR (<repo>/.kafka), KAFKA_HEAP (1g),
#      KAFKA_EXTRA_PROPERTIES (lines appended to the broker config by `start`, e.g. for a test broker).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${KAFKA_HOME_DIR:-$ROOT/.kafka}"
LIBS="$HOME_DIR/libs"
PORT="${KAFKA_PORT:-9092}"
CPORT="${KAFKA_CONTROLLER_PORT:-9093}"
PIDFILE="$HOME_DIR/kafka-$PORT.pid"
DATA="$HOME_DIR/data-$PORT"
LOGS="$HOME_DIR/logs-$PORT"
CONF="$HOME_DIR/server-$PORT.properties"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/scripts/kafka/pom.xml")"

die() { echo "kafka.sh: $*" >&2; exit 1; }

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; return; fi
  command -v java || die "Java is missing: install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

fetch() {
  if [ -f "$LIBS/.complete-$KAFKA_VERSION" ]; then return 0; fi
  command -v mvn >/dev/null || die "Maven is missing: install it (apt-get install maven) so the Kafka $KAFKA_VERSION jars can be fetched from Maven Central"
  java_bin >/dev/null
  echo "kafka.sh: fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $LIBS"
  rm -rf "$LIBS"; mkdir -p "$LIBS"
  mvn -q -B -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$LIBS" -DincludeScope=runtime || die "Maven could not fetch the Kafka jars (see output above)"
  touch "$LIBS/.complete-$KAFKA_VERSION"
}

run_java() {
  "$(java_bin)" -Xms128m -Xmx"${KAFKA_HEAP:-1g}" -XX:+UseG1GC \
    -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$ROOT/scripts/kafka/log4j2.yaml" \
    -cp "$LIBS/*" "$@"
}

start() {
  if listening "$PORT"; then echo "kafka.sh: a broker already listens on 127.0.0.1:$PORT; not starting another"; return 0; fi
  fetch
  mkdir -p "$HOME_DIR"; rm -rf "$DATA" "$LOGS"; mkdir -p "$DATA" "$LOGS"
  cat > "$CONF" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
delete.topic.enable=true
PROPS
  if [ -n "${KAFKA_EXTRA_PROPERTIES:-}" ]; then printf '%s\n' "$KAFKA_EXTRA_PROPERTIES" >> "$CONF"; fi
  local cid; cid="$(run_java kafka.tools.StorageTool random-uuid)"
  run_java kafka.tools.StorageTool format -t "$cid" -c "$CONF" >"$LOGS/format.log" 2>&1 \
    || { cat "$LOGS/format.log" >&2; die "formatting the data dir failed"; }
  launch
}

# The broker on $CONF and $DATA as they are, in the background; waits until it accepts connections.
launch() {
  nohup "$(java_bin)" -Xms128m -Xmx"${KAFKA_HEAP:-1g}" -XX:+UseG1GC \
    -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$ROOT/scripts/kafka/log4j2.yaml" \
    -cp "$LIBS/*" kafka.Kafka "$CONF" >>"$LOGS/stdout.log" 2>&1 &
  echo $! > "$PIDFILE"
  for _ in $(seq 1 120); do
    if listening "$PORT"; then echo "kafka.sh: Kafka $KAFKA_VERSION ready on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; return 0; fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -30 "$LOGS/stdout.log" "$LOGS/server.log" >&2 2>/dev/null; die "the broker exited during start-up"; }
    sleep 0.5
  done
  die "the broker did not accept connections on 127.0.0.1:$PORT within 60 s (logs: $LOGS)"
}

resume() {
  if listening "$PORT"; then echo "kafka.sh: a broker already listens on 127.0.0.1:$PORT; not starting another"; return 0; fi
  [ -f "$CONF" ] && [ -d "$DATA" ] || die "nothing to resume on port $PORT (no $CONF or $DATA): use start"
  launch
}

stop() {
  [ -f "$PIDFILE" ] || { echo "kafka.sh: no broker started by this script on port $PORT"; return 0; }
  local pid; pid="$(cat "$PIDFILE")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$PIDFILE"; echo "kafka.sh: stopped (pid $pid)"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  resume) resume ;;
  stop) stop ;;
  status) if listening "$PORT"; then echo "kafka.sh: listening on 127.0.0.1:$PORT"; else echo "kafka.sh: nothing listens on 127.0.0.1:$PORT"; exit 1; fi ;;
  *) echo "usage: scripts/kafka.sh fetch|start|resume|stop|status" >&2; exit 2 ;;
esac
