// What bench:dispatch and bench:dispatch-load send, and how they wait for the work behind it.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';

/** The headers of every benchmark request: JSON-RPC, A2A 1.0, the demo API key of tenant acme. */
export const A2A_HEADERS = { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' };

/** A JSON-RPC SendMessage with a fresh messageId (every request is new work, never a dedup hit). */
export const sendMessageBody = (returnImmediately) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'bench' }] }, configuration: { returnImmediately } },
  });

/**
 * autocannon sending SendMessage (a fresh messageId each) to `url` for `seconds` at its fastest;
 * `onAnswer` sees every answer's body.
 */
export const sendMessageLoad = (url, seconds, { connections, returnImmediately, onAnswer, rate }) =>
  autocannon({
    url,
    method: 'POST',
    headers: A2A_HEADERS,
    connections,
    duration: seconds,
    ...(rate ? { overallRate: rate } : {}),
    requests: [{ setupRequest: (req) => ({ ...req, body: sendMessageBody(returnImmediately) }) }],
    ...(onAnswer ? { setupClient: (client) => client.on('body', onAnswer) } : {}),
  });

/** How a result file names the load autocannon put on the dispatcher. */
export const describeLoad = ({ connections, durationSeconds, warmupSeconds, rounds }) => ({
  tool: 'autocannon',
  connections,
  durationSeconds,
  warmupSeconds,
  rounds,
});

/**
 * Until every task the dispatcher of `stack` accepted is COMPLETED (worker caught up, events
 * projected), so one scenario's backlog never slows the next. Returns how long that took.
 */
export async function drained(stack, timeoutMs = 300_000) {
  const db = new pg.Client({ connectionString: stack.dbUrl.toString() });
  await db.connect();
  const start = Date.now();
  try {
    for (;;) {
      const [{ n }] = (await db.query(`SELECT count(*)::int AS n FROM dispatcher.tasks WHERE state <> 'TASK_STATE_COMPLETED'`)).rows;
      if (n === 0) return Date.now() - start;
      if (Date.now() - start > timeoutMs) throw new Error(`${n} tasks still not completed after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await db.end();
  }
}
