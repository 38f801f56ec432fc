#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, combined broker+controller) for development and tests.
#   scripts/kafka.sh fetch    download the broker jars from Maven Central (cached in .kafka/libs)
#   scripts/kafka.sh start    fetch if needed, format a fresh data dir, start in the background, wait until ready
#   scripts/kafka.sh resume   start again on the data dir and config of an earlier `start` (after a stop or
#                             a kill: an outage that keeps the data), wait until ready
#   scripts/kafka.sh stop     stop the broker this script started (by pid)
#   scripts/kafka.sh status   exit 0 when something accepts connections on the port
#   scripts/kafka.sh credentials
#                             print the admin principal's client settings (KAFKA_SASL_MECHANISM,
#                             KAFKA_USERNAME, KAFKA_PASSWORD) as env lines; nothing with KAFKA_AUTH=none
#   scripts/kafka.sh cluster start|stop|status
#                             a three-node KRaft cluster on loopback (each node broker and controller):
#                             brokers on KAFKA_CLUSTER_PORT, +2, +4 (29092, 29094, 29096), controllers one
#                             above each; replication factor 3, min.insync.replicas=2, no unclean leader
#                             election. Single nodes of it are stopped and resumed with
#                             `KAFKA_PORT=<its port> scripts/kafka.sh stop|resume` (or killed by pid).
# Authentication is on unless KAFKA_AUTH=none: clients use SASL/SCRAM-SHA-512, the controller listener
# SASL/PLAIN, and the KRaft StandardAuthorizer allows only super users and what ACLs grant. The
# platform's principals (mesh-admin, mesh-dispatcher, mesh-directory, mesh-agents) are created when
# the data dir is formatted, with passwords generated once into $KAFKA_HOME_DIR/credentials.env
# (0600, shared by every broker started from that dir); teams get theirs from `mesh teams create`.
# Env: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093), KAFKA_HOME_DIR (<repo>/.kafka), KAFKA_HEAP (1g),
#      KAFKA_CLUSTER_PORT (29092), KAFKA_AUTH (scram | none), KAFKA_EXTRA_PROPERTIES (lines appended
#      to the broker config by `start`, e.g. for a test broker).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${KAFKA_HOME_DIR:-$ROOT/.kafka}"
LIBS="$HOME_DIR/libs"
CLUSTER_PORT="${KAFKA_CLUSTER_PORT:-29092}"
CLUSTER_SIZE=3
AUTH="${KAFKA_AUTH:-scram}"
CREDS="$HOME_DIR/credentials.env"
# Platform principals: trusted services, super users of the local broker (docs/operations.md, "Kafka identities").
PLATFORM_USERS="admin dispatcher directory agents"

# Files of the node listening on port $1 (controller on $2).
at_port() {
  PORT="$1"; CPORT="$2"
  PIDFILE="$HOME_DIR/kafka-$PORT.pid"
  DATA="$HOME_DIR/data-$PORT"
  LOGS="$HOME_DIR/logs-$PORT"
  CONF="$HOME_DIR/server-$PORT.properties"
}
at_port "${KAFKA_PORT:-9092}" "${KAFKA_CONTROLLER_PORT:-$(( ${KAFKA_PORT:-9092} + 1 ))}"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/scripts/kafka/pom.xml")"

die() { echo "kafka.sh: $*" >&2; exit 1; }

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; return; fi
  command -v java || die "Java is missing: install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
}

# Loads (first creating) the local principals' passwords.
credentials() {
  case "$AUTH" in scram) ;; none) return 0 ;; *) die "KAFKA_AUTH must be scram or none, not \"$AUTH\"" ;; esac
  mkdir -p "$HOME_DIR"
  if [ ! -f "$CREDS" ]; then
    ( umask 077
      for u in BROKER CONTROLLER $(echo "$PLATFORM_USERS" | tr '[:lower:]' '[:upper:]'); do
        echo "KAFKA_${u}_PASSWORD=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
      done > "$CREDS" )
  fi
  # shellcheck disable=SC1090
  . "$CREDS"
}

password_of() { local v="KAFKA_$(echo "$1" | tr '[:lower:]' '[:upper:]')_PASSWORD"; echo "${!v}"; }

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
  write_conf 1 "1@127.0.0.1:$CPORT" 1
  format "$(run_java kafka.tools.StorageTool random-uuid)"
  launch
}

# A fresh data dir and config for node $1 of the quorum $2, topics replicated $3 times.
write_conf() {
  local id="$1" voters="$2" rf="$3" isr=1
  [ "$rf" -ge 3 ] && isr=2
  mkdir -p "$HOME_DIR"; rm -rf "$DATA" "$LOGS"; mkdir -p "$DATA" "$LOGS"
  credentials
  if [ "$AUTH" = none ]; then
    cat > "$CONF" <<PROPS
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
PROPS
  else
    local supers="User:mesh-broker;User:mesh-controller" u
    for u in $PLATFORM_USERS; do supers="$supers;User:mesh-$u"; done
    cat > "$CONF" <<PROPS
listeners=SASL_PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$PORT
inter.broker.listener.name=SASL_PLAINTEXT
listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="mesh-broker" password="$KAFKA_BROKER_PASSWORD";
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mesh-controller" password="$KAFKA_CONTROLLER_PASSWORD" user_mesh-controller="$KAFKA_CONTROLLER_PASSWORD";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=$supers
PROPS
  fi
  cat >> "$CONF" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
log.dirs=$DATA
num.partitions=1
auto.create.topics.enable=false
default.replication.factor=$rf
min.insync.replicas=$isr
unclean.leader.election.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
log.retention.hours=24
delete.topic.enable=true
PROPS
  if [ -n "${KAFKA_EXTRA_PROPERTIES:-}" ]; then printf '%s\n' "$KAFKA_EXTRA_PROPERTIES" >> "$CONF"; fi
}

# Formats the node's data dir for cluster id $1.
format() {
  local scram=() u
  if [ "$AUTH" != none ]; then
    for u in broker $PLATFORM_USERS; do scram+=(--add-scram "SCRAM-SHA-512=[name=mesh-$u,password=$(password_of "$u")]"); done
  fi
  run_java kafka.tools.StorageTool format -t "$1" -c "$CONF" "${scram[@]}" >"$LOGS/format.log" 2>&1 \
    || { cat "$LOGS/format.log" >&2; die "formatting the data dir failed"; }
}

cluster_ports() { for i in $(seq 0 $((CLUSTER_SIZE - 1))); do echo $((CLUSTER_PORT + 2 * i)); done; }

cluster() {
  case "${1:-}" in
    start)
      fetch
      local voters="" id=1 p cid
      for p in $(cluster_ports); do voters="$voters${voters:+,}$id@127.0.0.1:$((p + 1))"; id=$((id + 1)); done
      for p in $(cluster_ports); do listening "$p" && die "port $p is taken: stop what listens there (scripts/kafka.sh cluster stop)"; done
      cid="$(run_java kafka.tools.StorageTool random-uuid)"
      id=1
      for p in $(cluster_ports); do
        at_port "$p" $((p + 1)); write_conf "$id" "$voters" "$CLUSTER_SIZE"; format "$cid"; id=$((id + 1))
      done
      # All three at once: a controller quorum needs a majority before any node is ready.
      for p in $(cluster_ports); do at_port "$p" $((p + 1)); launch >/dev/null & done
      wait
      for p in $(cluster_ports); do listening "$p" || die "node on $p did not start (logs: $HOME_DIR/logs-$p)"; done
      echo "kafka.sh: three-node cluster ready: 127.0.0.1:$(cluster_ports | paste -sd, - | sed 's/,/,127.0.0.1:/g')"
      ;;
    stop) for p in $(cluster_ports); do at_port "$p" $((p + 1)); stop; done ;;
    status)
      local up=0 p
      for p in $(cluster_ports); do listening "$p" && up=$((up + 1)); done
      echo "kafka.sh: $up of $CLUSTER_SIZE cluster nodes listening"; [ "$up" -eq "$CLUSTER_SIZE" ]
      ;;
    *) echo "usage: scripts/kafka.sh cluster start|stop|status" >&2; exit 2 ;;
  esac
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
  cluster) cluster "${2:-}" ;;
  credentials) credentials; [ "$AUTH" = none ] || printf 'KAFKA_SASL_MECHANISM=scram-sha-512\nKAFKA_USERNAME=mesh-admin\nKAFKA_PASSWORD=%s\n' "$KAFKA_ADMIN_PASSWORD" ;;
  status) if listening "$PORT"; then echo "kafka.sh: listening on 127.0.0.1:$PORT"; else echo "kafka.sh: nothing listens on 127.0.0.1:$PORT"; exit 1; fi ;;
  *) echo "usage: scripts/kafka.sh fetch|start|resume|stop|status|credentials|cluster start|stop|status" >&2; exit 2 ;;
esac
