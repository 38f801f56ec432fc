// Push receivers of the chaos run (scripts/chaos.mjs): local webhooks that record every delivery
// by config and event id, answer 503 to a share of requests (the dispatcher retries those), and
// can go down for a while (a fault). `check` turns what they got into the push invariants.
import { createServer } from 'node:http';

const RANK = { TASK_STATE_SUBMITTED: 1, TASK_STATE_WORKING: 2, TASK_STATE_INPUT_REQUIRED: 2, TASK_STATE_AUTH_REQUIRED: 2 };
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const rank = (s) => (TERMINAL.has(s) ? 3 : (RANK[s] ?? 0));

/** One webhook: POST /hook/{configId}; answers 503 to every `failEvery`-th request. */
class Receiver {
  constructor(name, port, failEvery) {
    this.name = name;
    this.port = port;
    this.failEvery = failEvery;
    this.requests = 0;
    this.refused = 0;
    /** configId → arrivals in order: { eventId, body, token, auth } */
    this.got = new Map();
    this.server = undefined;
  }

  url(configId) {
    return `http://127.0.0.1:${this.port}/hook/${configId}`;
  }

  start() {
    this.server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.requests += 1;
        if (this.failEvery > 0 && this.requests % this.failEvery === 0) {
          this.refused += 1;
          res.writeHead(503).end();
          return;
        }
        const configId = decodeURIComponent((req.url ?? '').replace(/^\/hook\//, ''));
        let body;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = { unparsable: true };
        }
        const list = this.got.get(configId) ?? [];
        list.push({
          eventId: String(req.headers['x-a2a-event-id'] ?? ''),
          body,
          token: req.headers['x-a2a-notification-token'],
          auth: req.headers.authorization,
        });
        this.got.set(configId, list);
        res.writeHead(204).end();
      });
    });
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  stop() {
    if (!this.server?.listening) return Promise.resolve();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The receivers of a run: `a` answers everything, `b` refuses every 7th request with 503. */
export class PushReceivers {
  constructor(ports) {
    this.list = [new Receiver('receiver-a', ports[0], 0), new Receiver('receiver-b', ports[1], 7)];
  }

  async start() {
    for (const r of this.list) await r.start();
  }

  async stop() {
    for (const r of this.list) await r.stop();
  }

  /** Takes receiver-a down for `ms` (connections refused: the dispatcher backs off and retries). */
  async outage(ms) {
    const r = this.list[0];
    await r.stop();
    await new Promise((resolve) => setTimeout(resolve, ms));
    await r.start();
  }

  /**
   * The push invariants. `subs`: one per push config, { configId, receiver (index), taskId, token,
   * auth, expectAll (config given with SendMessage: every event), expectFinal, finalState }.
   * `expected`: taskId → event ids the projector applied (read from the events topic).
   * `recorded`: configId → { eventIds: Set, notDelivered: n } from the dispatcher's push_deliveries.
   */
  check(subs, expected, recorded) {
    const out = {
      configs: subs.length,
      expectedEvents: 0,
      deliveries: 0,
      distinctEvents: 0,
      duplicateDeliveries: 0,
      missing: 0,
      notRecorded: 0,
      differingDuplicates: 0,
      wrongCredentials: 0,
      finalStateMismatches: 0,
      regressions: 0,
      undelivered: 0,
      refusedWith503: this.list.reduce((a, r) => a + r.refused, 0),
      examples: [],
    };
    const example = (what) => out.examples.length < 10 && out.examples.push(what);
    for (const s of subs) {
      const arrivals = this.list[s.receiver].got.get(s.configId) ?? [];
      out.deliveries += arrivals.length;
      const byId = new Map();
      let max = 0;
      const terminals = new Set();
      for (const a of arrivals) {
        if (a.token !== s.token || a.auth !== s.auth) {
          out.wrongCredentials += 1;
          example({ configId: s.configId, wrongCredentials: { token: a.token, auth: a.auth } });
        }
        const first = byId.get(a.eventId);
        if (first === undefined) byId.set(a.eventId, a);
        else {
          out.duplicateDeliveries += 1;
          if (JSON.stringify(first.body) !== JSON.stringify(a.body)) {
            out.differingDuplicates += 1;
            example({ configId: s.configId, eventId: a.eventId, differingDuplicate: [first.body, a.body] });
          }
        }
        const state = a.body?.statusUpdate?.status?.state;
        if (state !== undefined) {
          if (rank(state) < max) {
            out.regressions += 1;
            example({ configId: s.configId, regression: arrivals.map((x) => x.body?.statusUpdate?.status?.state ?? 'artifact') });
          }
          max = Math.max(max, rank(state));
          if (TERMINAL.has(state)) terminals.add(state);
        }
      }
      out.distinctEvents += byId.size;
      const rec = recorded.get(s.configId) ?? { eventIds: new Set(), notDelivered: 0 };
      out.undelivered += rec.notDelivered;
      for (const id of byId.keys()) {
        if (!rec.eventIds.has(id)) {
          out.notRecorded += 1;
          example({ configId: s.configId, notRecorded: id });
        }
      }
      const want = s.expectAll ? [...(expected.get(s.taskId) ?? [])] : [];
      out.expectedEvents += want.length;
      for (const id of want) {
        if (!byId.has(id)) {
          out.missing += 1;
          example({ configId: s.configId, task: s.taskId, missing: id, got: [...byId.keys()] });
        }
      }
      // The terminal state pushed is the one GetTask answers (COMPLETED without an artifact is FAILED in both).
      if ((s.expectAll || s.expectFinal) && (terminals.size !== 1 || !terminals.has(s.finalState))) {
        out.finalStateMismatches += 1;
        example({ configId: s.configId, task: s.taskId, finalState: s.finalState, terminalsReceived: [...terminals] });
      }
    }
    return out;
  }
}
