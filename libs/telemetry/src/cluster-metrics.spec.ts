import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('./cluster-metrics.fixture.js', import.meta.url));

/** Forks a worker that asks for the cluster's metrics; `primary` answers (or not) as the primary would. */
async function ask(primary: (request: { type: string; id: number }) => object | undefined, timeoutMs = 5000) {
  const child = fork(fixture, [String(timeoutMs)], { stdio: 'ignore' });
  try {
    return await new Promise<{ result?: string; failed?: string }>((resolve, reject) => {
      child.on('error', reject);
      child.on('message', (m: { type?: string; id?: number; result?: string; failed?: string }) => {
        if (m.type === 'mesh:metrics-request') {
          const answer = primary(m as { type: string; id: number });
          if (answer) child.send(answer);
        } else resolve(m);
      });
    });
  } finally {
    child.kill();
  }
}

test("a worker's scrape answers with the text the primary collected", async () => {
  const got = await ask((r) => ({ type: 'mesh:metrics-response', id: r.id, text: 'mesh_tasks_total 2\n' }));
  assert.deepEqual(got, { result: 'mesh_tasks_total 2\n' });
});

test("the primary's failure to collect (a worker did not answer) fails the scrape, naming it", async () => {
  const got = await ask((r) => ({ type: 'mesh:metrics-response', id: r.id, error: 'Operation timed out.' }));
  assert.deepEqual(got, { failed: 'Operation timed out.' });
});

test('a primary that never answers fails the scrape after the timeout instead of hanging it', async () => {
  const got = await ask(() => undefined, 200);
  assert.deepEqual(got, { failed: 'the cluster primary did not answer within 200 ms' });
});

test('an answer to another request is not taken for this one', async () => {
  const got = await ask((r) => ({ type: 'mesh:metrics-response', id: r.id + 1, text: 'not mine' }), 300);
  assert.deepEqual(got, { failed: 'the cluster primary did not answer within 300 ms' });
});

test("the primary's aggregate sums what each process counted and takes the broker's values once", async () => {
  const { AggregatorRegistry } = await import('prom-client');
  const { MeshMetrics } = await import('./metrics.js');
  const processes = [new MeshMetrics({ publicAgents: () => true }), new MeshMetrics({ publicAgents: () => true })];
  for (const m of processes) {
    m.tasks.inc({ tenant: 'acme', agent: 'a', outcome: 'accepted' });
    // Every replica samples the same broker offsets.
    m.agentLag.set({ agent: 'a' }, 7);
    m.consumerLag.set({ group: 'g', topic: 't' }, 7);
    m.deadLetterDepth.set({ topic: 't.dlq' }, 3);
  }
  const text = await AggregatorRegistry.aggregate(await Promise.all(processes.map((m) => m.registry.getMetricsAsJSON()))).metrics();
  assert.match(text, /^mesh_tasks_total\{tenant="acme",agent="a",outcome="accepted"\} 2$/m);
  assert.match(text, /^mesh_agent_backlog\{agent="a"\} 7$/m);
  assert.match(text, /^mesh_consumer_lag\{group="g",topic="t"\} 7$/m);
  assert.match(text, /^mesh_dead_letter_depth\{topic="t.dlq"\} 3$/m);
  // Default process metrics come through once per family.
  assert.equal(text.match(/^# TYPE nodejs_heap_size_used_bytes /gm)?.length, 1);
});

test('a scrape whose aggregate cannot be had is a 503 naming why, never a partial answer', async () => {
  const { MeshMetrics } = await import('./metrics.js');
  const { MetricsController } = await import('./metrics.module.js');
  const controller = new MetricsController(new MeshMetrics({ defaultMetrics: false }));
  // As in a cluster worker of runClusterPrimary; this test process has no primary to ask.
  (controller as unknown as { cluster: boolean }).cluster = true;
  const sent: { status?: number; body?: string } = {};
  const res = {
    status: (code: number) => ((sent.status = code), res),
    type: () => res,
    setHeader: () => res,
    send: (body: string) => ((sent.body = body), res),
  };
  await controller.scrape(res as never);
  assert.equal(sent.status, 503);
  assert.equal(sent.body, 'metrics unavailable: this process has no cluster primary to ask\n');
});
