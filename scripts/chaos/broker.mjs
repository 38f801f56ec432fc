// The chaos run's own Kafka broker (scripts/chaos.mjs): started with scripts/kafka.sh on its own
// ports and home, stopped and resumed with its data (the broker fault), and read at the end:
// consumer lag of the groups that do the work, and every task event (the push invariants' source).
// It authenticates as scripts/kafka.sh's brokers do (KAFKA_AUTH=none: not): each process connects
// as its platform principal, with the password kafka.sh generated into the run's home.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConsumerGroups, decodeEnvelope } from '@mesh/contract';

/** What the brokers of a scripts/kafka.sh home ask of a client; shared by ChaosBroker and ChaosCluster. */
class Principals {
  /** The env a process connects with as `mesh-<name>`; with KAFKA_AUTH=none, none (nor the caller's own). */
  principal(name) {
    if (this.env.KAFKA_AUTH === 'none') return { KAFKA_SASL_MECHANISM: undefined, KAFKA_USERNAME: undefined, KAFKA_PASSWORD: undefined };
    // Read after start: kafka.sh writes the file when it formats the first node.
    const passwords = parseEnv(readFileSync(`${this.home}/credentials.env`, 'utf8'));
    const password = passwords[`KAFKA_${name.toUpperCase()}_PASSWORD`];
    if (!password) throw new Error(`${this.home}/credentials.env has no password for mesh-${name}`);
    return { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_USERNAME: `mesh-${name}`, KAFKA_PASSWORD: password };
  }

  /** kafkajs settings for this run's own clients: the admin principal (or none). */
  kafkaAuth() {
    const p = this.principal('admin');
    return p.KAFKA_USERNAME ? { sasl: { mechanism: p.KAFKA_SASL_MECHANISM, username: p.KAFKA_USERNAME, password: p.KAFKA_PASSWORD } } : {};
  }
}

export class ChaosBroker extends Principals {
  /** `port`, `controllerPort`, `home` as for scripts/kafka.sh (KAFKA_PORT, KAFKA_CONTROLLER_PORT, KAFKA_HOME_DIR). */
  constructor(root, { port, controllerPort, home }) {
    super();
    this.root = root;
    this.port = port;
    this.home = home;
    this.env = {
      ...process.env,
      KAFKA_PORT: String(port),
      KAFKA_CONTROLLER_PORT: String(controllerPort),
      KAFKA_HOME_DIR: home,
      KAFKA_HEAP: '512m',
    };
    this.started = false;
  }

  get brokers() {
    return `127.0.0.1:${this.port}`;
  }

  /** Runs scripts/kafka.sh, resolving with its exit code; its output goes to stderr (stdout carries the report only). */
  sh(cmd) {
    return new Promise((resolve) => {
      const c = spawn(`${this.root}scripts/kafka.sh`, [cmd], { env: this.env, stdio: ['ignore', 2, 'inherit'] });
      c.on('error', () => resolve(-1));
      c.on('exit', (code) => resolve(code ?? -1));
    });
  }

  /** Fresh broker via scripts/kafka.sh; refuses a port something already listens on (another run's broker). */
  async start() {
    if ((await this.sh('status')) === 0)
      throw new Error(`something already listens on 127.0.0.1:${this.port}; another chaos run? (CHAOS_KAFKA_PORT)`);
    // Reuse the repo's fetched jars instead of downloading them again into this home.
    const repoLibs = `${this.root}.kafka/libs`;
    if (!existsSync(`${this.home}/libs`) && existsSync(repoLibs) && readdirSync(repoLibs).some((f) => f.startsWith('.complete-'))) {
      mkdirSync(this.home, { recursive: true });
      symlinkSync(repoLibs, `${this.home}/libs`);
    }
    if ((await this.sh('start')) !== 0) throw new Error('could not start the chaos broker');
    this.started = true;
  }

  /** The broker fault: a clean shutdown (SIGTERM, SIGKILL after 30 s); its data stays. */
  async stop() {
    if ((await this.sh('stop')) !== 0) throw new Error('could not stop the chaos broker');
  }

  /** Starts the broker again on its data (`kafka.sh resume`); returns once it accepts connections. */
  async startAgain() {
    if ((await this.sh('resume')) !== 0) throw new Error('the chaos broker did not start again');
  }

  /** Stops the broker for good at the end of the run. */
  async close() {
    if (this.started) await this.sh('stop');
  }
}

/**
 * The chaos run's three-broker KRaft cluster (`npm run chaos -- --cluster`): scripts/kafka.sh
 * cluster on its own ports and home (replication factor 3, min.insync.replicas=2, no unclean
 * leader election). Its fault is SIGKILL of the node leading a partition, restarted on its data.
 */
export class ChaosCluster extends Principals {
  /** `port`: the first node's broker port (KAFKA_CLUSTER_PORT); nodes at +0, +2, +4, controllers one above. */
  constructor(root, { port, home }) {
    super();
    this.root = root;
    this.port = port;
    this.home = home;
    this.ports = [port, port + 2, port + 4];
    // Fast failure detection: a killed leader is replaced in seconds, not after the 9 s default.
    this.env = {
      ...process.env,
      KAFKA_CLUSTER_PORT: String(port),
      KAFKA_HOME_DIR: home,
      KAFKA_HEAP: '384m',
      KAFKA_EXTRA_PROPERTIES: 'broker.session.timeout.ms=3000\nbroker.heartbeat.interval.ms=500',
    };
    this.started = false;
  }

  get brokers() {
    return this.ports.map((p) => `127.0.0.1:${p}`).join(',');
  }

  sh(args, env = {}) {
    return new Promise((resolve) => {
      const c = spawn(`${this.root}scripts/kafka.sh`, args, { env: { ...this.env, ...env }, stdio: ['ignore', 2, 'inherit'] });
      c.on('error', () => resolve(-1));
      c.on('exit', (code) => resolve(code ?? -1));
    });
  }

  async start() {
    if ((await this.sh(['cluster', 'status'])) === 0 || (await this.sh(['status'], { KAFKA_PORT: String(this.port) })) === 0)
      throw new Error(`something already listens on 127.0.0.1:${this.port}; another chaos run? (CHAOS_KAFKA_CLUSTER_PORT)`);
    const repoLibs = `${this.root}.kafka/libs`;
    if (!existsSync(`${this.home}/libs`) && existsSync(repoLibs) && readdirSync(repoLibs).some((f) => f.startsWith('.complete-'))) {
      mkdirSync(this.home, { recursive: true });
      symlinkSync(repoLibs, `${this.home}/libs`);
    }
    if ((await this.sh(['cluster', 'start'])) !== 0) throw new Error('could not start the chaos cluster');
    this.started = true;
  }

  /**
   * SIGKILLs the node leading partition 0 of `topic`, waits `downMs`, starts it again on its data.
   * Returns the killed node's port.
   */
  async killLeader(kafka, topic, downMs) {
    const admin = kafka.admin();
    await admin.connect();
    let leader;
    try {
      const meta = await admin.fetchTopicMetadata({ topics: [topic] });
      leader = meta.topics[0]?.partitions.find((p) => p.partitionId === 0)?.leader;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    if (leader === undefined || leader < 1 || leader > 3) throw new Error(`no leader for ${topic}[0]`);
    const port = this.ports[leader - 1];
    const pid = Number(readFileSync(`${this.home}/kafka-${port}.pid`, 'utf8').trim());
    process.kill(pid, 'SIGKILL');
    await sleep(downMs);
    const env = { KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(port + 1) };
    // Kept so close() waits for it: a node started after the cluster stop would outlive the run.
    this.resuming = this.sh(['resume'], env);
    if ((await this.resuming) !== 0) throw new Error(`node on ${port} did not start again`);
    return port;
  }

  async close() {
    await this.resuming;
    if (this.started) await this.sh(['cluster', 'stop']);
  }
}

/**
 * Lag of the consumer groups that do the work: the projector, the workers, and every group with a
 * live member (dead-letter topics excluded). A SIGKILLed dispatcher leaves its per-instance groups
 * (event fan-out, catalog) behind without members; nothing reads them again and the broker expires
 * them, so their lag is returned apart (`dead`), not counted. A live dispatcher's event fan-out is
 * not work either: it reads only while a stream is open on its replica (and seeks to the
 * projector's offsets when it wakes), so its lag is expected and not counted. Waits up to
 * `timeoutMs` for 0.
 */
export async function workLag(kafka, prefix, timeoutMs = 60000) {
  const a = kafka.admin();
  await a.connect();
  const groups = new ConsumerGroups(prefix);
  const workGroup = (g) => g === groups.dispatcherProjector() || g.startsWith(groups.agentWorkersPrefix());
  try {
    const until = Date.now() + timeoutMs;
    let total;
    let dead;
    do {
      total = 0;
      dead = {};
      const listed = (await a.listGroups()).groups;
      const described = await a.describeGroups(listed.map((g) => g.groupId));
      const topics = (await a.listTopics()).filter((t) => t.startsWith(prefix) && !t.endsWith('.dlq'));
      for (const g of described.groups) {
        let groupLag = 0;
        const offsets = await a.fetchOffsets({ groupId: g.groupId, topics });
        for (const t of offsets) {
          const ends = await a.fetchTopicOffsets(t.topic);
          for (const p of t.partitions) {
            if (p.offset === '-1') continue;
            const end = ends.find((e) => e.partition === p.partition);
            groupLag += Math.max(0, Number(end?.offset ?? 0) - Number(p.offset));
          }
        }
        if (g.members.length > 0 || workGroup(g.groupId)) total += groupLag;
        else if (groupLag > 0) dead[g.groupId] = groupLag;
      }
      if (total === 0) break;
      await sleep(1000);
    } while (Date.now() < until);
    return { total, dead };
  } finally {
    await a.disconnect();
  }
}

/** Records on the run's dead-letter topics, by topic (a dead-lettered command or event is a lost task). */
export async function deadLetters(kafka, prefix) {
  const a = kafka.admin();
  await a.connect();
  try {
    const out = {};
    for (const t of (await a.listTopics()).filter((x) => x.startsWith(prefix) && x.endsWith('.dlq'))) {
      const n = (await a.fetchTopicOffsets(t)).reduce((s, p) => s + Number(p.high) - Number(p.low), 0);
      if (n > 0) out[t] = n;
    }
    return out;
  } finally {
    await a.disconnect();
  }
}

/**
 * The event ids `{executionId}:{seq}` a push subscriber of each task must get, read from the events
 * topic (independently of the dispatcher's tables): per task in offset order, every status or
 * artifact event whose seq is above every earlier one, up to and including the first final status —
 * the events the projector applies (a lower or equal seq is a duplicate or a dead owner's leftover).
 */
export async function pushableEvents(kafka, topic, taskIds) {
  const a = kafka.admin();
  await a.connect();
  const ends = await a.fetchTopicOffsets(topic).finally(() => a.disconnect());
  const remaining = new Map(ends.filter((p) => Number(p.high) > Number(p.low)).map((p) => [p.partition, Number(p.high)]));
  const state = new Map(); // taskId → { ids: [], maxSeq, closed }
  const groupId = `${topic}.chaos-check.${Date.now()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let done;
  const finished = new Promise((r) => (done = r));
  if (remaining.size === 0) done();
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (Number(message.offset) + 1 >= (remaining.get(partition) ?? 0)) {
        remaining.delete(partition);
        if (remaining.size === 0) done();
      }
      let env;
      try {
        env = decodeEnvelope(message);
      } catch {
        return;
      }
      if (!taskIds.has(env.identity.taskId) || (env.kind !== 'task.status' && env.kind !== 'task.artifact')) return;
      const s = state.get(env.identity.taskId) ?? { ids: [], maxSeq: -1, closed: false };
      state.set(env.identity.taskId, s);
      if (s.closed || env.body.seq <= s.maxSeq) return;
      s.maxSeq = env.body.seq;
      s.ids.push(`${env.identity.executionId}:${env.body.seq}`);
      if (env.kind === 'task.status' && env.body.final) s.closed = true;
    },
  });
  await Promise.race([finished, sleep(60000)]);
  await consumer.disconnect();
  const a2 = kafka.admin();
  await a2.connect();
  await a2.deleteGroups([groupId]).catch(() => undefined);
  await a2.disconnect();
  return new Map([...state].map(([id, s]) => [id, s.ids]));
}
