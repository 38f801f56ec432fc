import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { logLevel } from 'kafkajs';
import { createKafka } from '@mesh/bus';

/**
 * A single-node KRaft broker of one's own (scripts/kafka.sh on free ports and a temp home), for
 * tests and scripts that stop and restart Kafka: the shared broker on 9092 must never be stopped.
 * Free of node:test so scripts can use it too (built to test/dist/support/private-kafka.js).
 */
export interface PrivateKafka {
  /** `['127.0.0.1:<port>']`. */
  readonly brokers: string[];
  readonly port: number;
  readonly controllerPort: number;
  /** KAFKA_HOME_DIR of this broker (config, data, logs), deleted by {@link destroy}. */
  readonly homeDir: string;
  /** Kills the broker process (SIGKILL by default: an outage, not a clean shutdown); its data stays. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on its data (`kafka.sh resume`); resolves once it answers as the same cluster. */
  resume(): Promise<void>;
  /**
   * Starts it again on a freshly formatted data dir (`kafka.sh start`, as `npm start` does): a new,
   * empty cluster on the same port. Stop it first.
   */
  startEmpty(): Promise<void>;
  /** Kills it if it runs and deletes its home dir; safe to call more than once. */
  destroy(): Promise<void>;
}

export interface PrivateKafkaOptions {
  /** First port probed (the controller takes the next one); default 29192 plus a random even offset. */
  firstPort?: number;
  /** JVM heap (KAFKA_HEAP); default 384m: a test broker holds little. */
  heap?: string;
  /** Broker settings added to kafka.sh's (KAFKA_EXTRA_PROPERTIES); default {@link FAST_RESTART}. */
  properties?: Record<string, string>;
}

/**
 * After a kill, the controller refuses the restarted broker's registration until the old one's
 * session expires (`broker.session.timeout.ms`, 9 s by default): a shorter one makes a restart quick.
 */
export const FAST_RESTART: Record<string, string> = { 'broker.session.timeout.ms': '3000', 'broker.heartbeat.interval.ms': '500' };

/** Repository root (test/dist/support → ../../..). */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const kafkaSh = join(root, 'scripts/kafka.sh');
const run = promisify(execFile);
/** Ports that belong to other brokers on this machine (shared dev broker, chaos runs). */
const RESERVED = new Set([9092, 9093, 19092, 19093, 19192, 19193]);

/** A private broker's home: the shared jars, and the shared broker's principals (the specs' credentials work on it). */
function shareHome(homeDir: string): void {
  symlinkSync(join(root, '.kafka', 'libs'), join(homeDir, 'libs'));
  const credentials = join(root, '.kafka', 'credentials.env');
  if (existsSync(credentials)) copyFileSync(credentials, join(homeDir, 'credentials.env'));
}

/** Starts a private broker on the first free port pair from `firstPort`; throws if none starts. */
export async function startPrivateKafka(opts: PrivateKafkaOptions = {}): Promise<PrivateKafka> {
  // Jars are fetched once into the repo's cache and shared by link: Maven is slow and the jars are large.
  const sharedEnv = { ...process.env };
  delete sharedEnv.KAFKA_HOME_DIR;
  await run(kafkaSh, ['fetch'], { env: sharedEnv });
  // A random start keeps two sessions running the same spec from probing the same ports.
  let port = opts.firstPort ?? 29192 + 2 * Math.floor(Math.random() * 400);
  const errors: string[] = [];
  for (let attempt = 0; attempt < 8; attempt++, port += 2) {
    if (RESERVED.has(port) || RESERVED.has(port + 1) || !(await isFree(port)) || !(await isFree(port + 1))) continue;
    const homeDir = await mkdtemp(join(tmpdir(), 'mesh-kafka-'));
    shareHome(homeDir);
    const broker = new Broker(port, port + 1, homeDir, opts.heap ?? '384m', opts.properties ?? FAST_RESTART);
    try {
      await broker.start();
      return broker;
    } catch (err) {
      errors.push(`${port}: ${err instanceof Error ? err.message : String(err)}`);
      await broker.destroy();
    }
  }
  throw new Error(`no private Kafka broker could be started:\n${errors.join('\n')}`);
}

class Broker implements PrivateKafka {
  readonly brokers: string[];
  private clusterId?: string;
  private destroyed = false;
  private readonly onExit = () => this.killSync('SIGKILL', true);

  constructor(
    readonly port: number,
    readonly controllerPort: number,
    readonly homeDir: string,
    private readonly heap: string,
    private readonly properties: Record<string, string>,
    /** False for a node of a cluster: the cluster owns the home dir. */
    private readonly ownsHome = true,
  ) {
    this.brokers = [`127.0.0.1:${port}`];
    // Backstop for a spec that dies before its after() hook: never leave a JVM or its data behind.
    process.once('exit', this.onExit);
  }

  /** Resumes this node of a cluster on its data (its cluster id is the quorum's). */
  async resumeNode(): Promise<void> {
    await this.script('resume');
  }

  private get env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      KAFKA_PORT: String(this.port),
      KAFKA_CONTROLLER_PORT: String(this.controllerPort),
      KAFKA_HOME_DIR: this.homeDir,
      KAFKA_HEAP: this.heap,
      KAFKA_EXTRA_PROPERTIES: Object.entries(this.properties)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n'),
    };
  }

  private get pidFile(): string {
    return join(this.homeDir, `kafka-${this.port}.pid`);
  }

  private pid(): number | undefined {
    return existsSync(this.pidFile) ? Number(readFileSync(this.pidFile, 'utf8').trim()) : undefined;
  }

  async start(): Promise<void> {
    await this.script('start');
    const meta = readFileSync(join(this.homeDir, `data-${this.port}`, 'meta.properties'), 'utf8');
    this.clusterId = /^cluster\.id=(.+)$/m.exec(meta)?.[1]?.trim();
    await this.assertOurs();
  }

  startEmpty(): Promise<void> {
    return this.start();
  }

  async resume(): Promise<void> {
    await this.script('resume');
    await this.assertOurs();
  }

  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const pid = this.pid();
    if (pid === undefined || !alive(pid)) return;
    process.kill(pid, signal);
    for (let i = 0; i < 240 && alive(pid); i++) await new Promise((r) => setTimeout(r, 250));
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
    // The leader thread turns zombie before the other threads have exited and closed the sockets.
    for (let i = 0; i < 200 && ((await accepts(this.port)) || (await accepts(this.controllerPort))); i++)
      await new Promise((r) => setTimeout(r, 50));
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    await this.stop('SIGKILL');
    this.killSync('SIGKILL', true);
  }

  private killSync(signal: NodeJS.Signals, remove: boolean): void {
    const pid = this.pid();
    if (pid !== undefined && alive(pid)) process.kill(pid, signal);
    if (remove && !this.ownsHome) {
      process.off('exit', this.onExit);
    } else if (remove) {
      this.destroyed = true;
      rmSync(this.homeDir, { recursive: true, force: true });
      process.off('exit', this.onExit);
    }
  }

  private async script(cmd: 'start' | 'resume'): Promise<void> {
    const before = this.pid();
    try {
      await run(kafkaSh, [cmd], { env: this.env });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`kafka.sh ${cmd} on port ${this.port} failed: ${(e.stderr ?? e.message).trim().slice(-1500)}`, { cause: err });
    }
    // kafka.sh answers "already listens" without starting anything when the port was taken meanwhile.
    const pid = this.pid();
    if (pid === undefined || pid === before || !alive(pid)) throw new Error(`kafka.sh ${cmd}: port ${this.port} is not ours`);
  }

  /** The listener answers with our cluster id (another session may have raced us to the port). */
  private async assertOurs(): Promise<void> {
    const admin = createKafka({ brokers: this.brokers, clientId: 'private-kafka', retries: 20 }, { logLevel: logLevel.NOTHING }).admin();
    try {
      await admin.connect();
      const { clusterId } = await admin.describeCluster();
      if (!this.clusterId || clusterId !== this.clusterId)
        throw new Error(`port ${this.port} answers as cluster ${clusterId}, not ours (${this.clusterId})`);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}

/** The process exists and is not a zombie (a killed JVM stays one until init reaps it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc (not Linux): signal 0 is all we know
  }
}

/** Something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** One node (broker and controller) of a {@link PrivateKafkaCluster}. */
export interface ClusterNode {
  readonly nodeId: number;
  readonly port: number;
  /** SIGKILLs the node; its data stays. */
  kill(): Promise<void>;
  /** Starts it again on its data (`kafka.sh resume`). */
  resume(): Promise<void>;
}

/** A three-node KRaft cluster of one's own (`kafka.sh cluster start`): replication factor 3, min ISR 2. */
export interface PrivateKafkaCluster {
  readonly brokers: string[];
  readonly nodes: ClusterNode[];
  node(nodeId: number): ClusterNode;
  /** Kills every node and deletes the home dir; safe to call more than once. */
  destroy(): Promise<void>;
}

/** Starts a private three-node cluster on six free consecutive ports; throws if it does not start. */
export async function startPrivateKafkaCluster(opts: Omit<PrivateKafkaOptions, 'firstPort'> = {}): Promise<PrivateKafkaCluster> {
  const sharedEnv = { ...process.env };
  delete sharedEnv.KAFKA_HOME_DIR;
  await run(kafkaSh, ['fetch'], { env: sharedEnv });
  let base = 30192 + 6 * Math.floor(Math.random() * 300);
  for (let attempt = 0; attempt < 8; attempt++, base += 6) {
    const ports = Array.from({ length: 6 }, (_, i) => base + i);
    if (ports.some((p) => RESERVED.has(p))) continue;
    if (!(await Promise.all(ports.map(isFree))).every(Boolean)) continue;
    const homeDir = await mkdtemp(join(tmpdir(), 'mesh-kafka-cluster-'));
    shareHome(homeDir);
    const env: NodeJS.ProcessEnv = {
      ...sharedEnv,
      KAFKA_HOME_DIR: homeDir,
      KAFKA_CLUSTER_PORT: String(base),
      KAFKA_HEAP: opts.heap ?? '384m',
      KAFKA_EXTRA_PROPERTIES: Object.entries(opts.properties ?? FAST_RESTART)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n'),
    };
    const nodes = [0, 1, 2].map(
      (i) => new Broker(base + 2 * i, base + 2 * i + 1, homeDir, env.KAFKA_HEAP!, opts.properties ?? FAST_RESTART, false),
    );
    const destroy = async () => {
      await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
      rmSync(homeDir, { recursive: true, force: true });
    };
    try {
      await run(kafkaSh, ['cluster', 'start'], { env });
      const view = nodes.map((n, i) => ({
        nodeId: i + 1,
        port: n.port,
        kill: () => n.stop('SIGKILL'),
        resume: () => n.resumeNode(),
      }));
      return {
        brokers: nodes.map((n) => `127.0.0.1:${n.port}`),
        nodes: view,
        node: (id) => view[id - 1],
        destroy,
      };
    } catch (err) {
      await destroy();
      if (attempt === 7) throw err;
    }
  }
  throw new Error('no private Kafka cluster could be started');
}
