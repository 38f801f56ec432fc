import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * Set by `runClusterPrimary` in the workers it forks. A scrape of a port shared by node:cluster
 * workers reaches one of them; with this set, that worker answers for all of them: it asks the
 * primary, which collects every worker's registry (prom-client's AggregatorRegistry: counters and
 * histograms summed, gauges by their `aggregator` — the broker-observed ones taken once, see
 * MeshMetrics — each default metric by its own) and hands back the text.
 */
export const CLUSTER_METRICS_ENV = 'MESH_CLUSTER_METRICS';

const REQUEST = 'mesh:metrics-request';
const RESPONSE = 'mesh:metrics-response';

/** A little over prom-client's own 5 s collection timeout, so its error is the one reported. */
const ANSWER_TIMEOUT_MS = 6000;

interface MetricsMessage {
  type: string;
  id: number;
  text?: string;
  error?: string;
}

const isMetricsMessage = (m: unknown, type: string): m is MetricsMessage =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === type;

/** Whether this process answers `/metrics` for its whole cluster (see {@link CLUSTER_METRICS_ENV}). */
export function answersForCluster(): boolean {
  return cluster.isWorker && process.env[CLUSTER_METRICS_ENV] === '1' && typeof process.send === 'function';
}

const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
let nextId = 0;
let sharing = false;

/** In a cluster worker: lets the primary collect `registry`, and listens for the primary's answers. */
export function shareWithCluster(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  if (sharing) return;
  sharing = true;
  // Constructing one installs prom-client's listener that answers the primary's collection.
  new AggregatorRegistry();
  process.on('message', (m: unknown) => {
    if (!isMetricsMessage(m, RESPONSE)) return;
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error !== undefined) w.reject(new Error(m.error));
    else w.resolve(m.text ?? '');
  });
}

/** In a cluster worker: the Prometheus text of every worker of the cluster, aggregated by the primary. */
export function clusterMetrics(timeoutMs = ANSWER_TIMEOUT_MS): Promise<string> {
  const send = process.send?.bind(process);
  if (!send) return Promise.reject(new Error('this process has no cluster primary to ask'));
  const id = nextId++;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`the cluster primary did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    waiting.set(id, {
      resolve: (text) => (clearTimeout(timer), resolve(text)),
      reject: (err) => (clearTimeout(timer), reject(err)),
    });
    send({ type: REQUEST, id });
  });
}

/** In the cluster primary: answers each worker's request with the aggregate of every worker's metrics. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, m: unknown) => {
    if (!isMetricsMessage(m, REQUEST)) return;
    const reply = (body: Partial<MetricsMessage>) => {
      if (worker.isConnected()) worker.send({ type: RESPONSE, id: m.id, ...body });
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => reply({ error: err instanceof Error ? err.message : String(err) }),
    );
  });
}
