#!/usr/bin/env node
// node bench/tenant-isolation.mjs (after npm run build) — how one tenant's large sends move another
// tenant's reads: tenant globex reads one of its tasks (GetTask, one request at a time) while
// tenant acme is quiet, then while acme sends BENCH_BIG_KB-KiB messages (SendMessage,
// returnImmediately) over BENCH_BIG_CONNECTIONS connections. Prints globex's GetTask latency
// percentiles for both phases, acme's sends/s, and the dispatcher's event-loop utilisation.
// The dispatcher runs with the per-tenant byte budget as configured (DISPATCHER_TENANT_BYTES_PER_S,
// DISPATCHER_TENANT_BYTES_BURST; unset: their defaults; 0: off); acme waits the Retry-After of a
// refused send, as a client should.
// With BENCH_CPU_PROFILE_DIR=dir the dispatcher writes a V8 CPU profile (read it with
// bench/profile-summary.mjs). Needs the local Kafka and Postgres (see README). Not part of `npm run bench`.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { A2A_HEADERS } from './dispatch-requests.mjs';
import { startDispatchStack } from './dispatch-stack.mjs';
import { integer } from './settings.mjs';

const bigKb = integer('BENCH_BIG_KB', 850);
const connections = integer('BENCH_BIG_CONNECTIONS', 8);
const phaseS = integer('BENCH_PHASE_S', 10);
// Unset: the dispatcher's default budget ('' counts as unset in its config, and overrides the
// bench stack's "off").
process.env.DISPATCHER_TENANT_BYTES_PER_S ??= '';

const stack = await startDispatchStack('bench-iso.', { companions: false });
const url = stack.urls.dispatcher;
const globex = { ...A2A_HEADERS, authorization: 'Bearer demo-globex' };
const rpc = async (headers, method, params) => {
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return res.json();
};
const message = (text) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } });

try {
  const created = await rpc(globex, 'SendMessage', message('globex task'));
  const taskId = created.result?.task?.id ?? created.result?.id;
  if (!taskId) throw new Error(`no task: ${JSON.stringify(created).slice(0, 300)}`);
  const big = 'x'.repeat(bigKb * 1024);

  /** globex's GetTask latencies (ms) for `seconds`, one request at a time. */
  async function reads(seconds) {
    const until = Date.now() + seconds * 1000;
    const ms = [];
    while (Date.now() < until) {
      const t = performance.now();
      const r = await rpc(globex, 'GetTask', { id: taskId, historyLength: 0 });
      if (!r.result) throw new Error(`GetTask failed: ${JSON.stringify(r).slice(0, 300)}`);
      ms.push(performance.now() - t);
    }
    return ms;
  }
  /** acme's big sends for `seconds` over `connections` loops; returns how many were accepted and every answer's status. */
  async function bigSends(seconds) {
    const until = Date.now() + seconds * 1000;
    const statuses = {};
    let n = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < until) {
          const body = JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'SendMessage',
            params: { ...message(big), configuration: { returnImmediately: true } },
          });
          const res = await fetch(url, { method: 'POST', headers: A2A_HEADERS, body });
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status === 429) {
            const wait = Math.min(Number(res.headers.get('retry-after')) * 1000, until - Date.now());
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          } else n++;
        }
      }),
    );
    return { n, statuses };
  }
  const pct = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
  };
  const summary = (xs) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), p99: pct(xs, 99), max: pct(xs, 100) });

  await reads(2); // warm-up
  let since = Date.now();
  const quiet = await reads(phaseS);
  const quietElu = stack.eventLoopUtilization(since);
  since = Date.now();
  const [loaded, sends] = await Promise.all([reads(phaseS), bigSends(phaseS)]);
  const loadedElu = stack.eventLoopUtilization(since);
  console.log(
    JSON.stringify(
      {
        bigKb,
        connections,
        phaseS,
        globexGetTaskMs: { quiet: summary(quiet), whileAcmeSendsBig: summary(loaded) },
        tenantBytesPerS: process.env.DISPATCHER_TENANT_BYTES_PER_S || 'default',
        acmeSends: { acceptedPerSecond: Math.round((sends.n / phaseS) * 10) / 10, statuses: sends.statuses },
        dispatcherEventLoopUtilization: { quiet: quietElu, whileAcmeSendsBig: loadedElu },
      },
      null,
      2,
    ),
  );
} finally {
  await stack.stop();
}
