import type { Envelope } from '@mesh/contract';

/** Delivers envelopes of an agent's command channel (a @mesh/bus BusConsumer satisfies it). */
export interface CommandSource {
  /** `ctx.signal` aborts when the partition is revoked or the consumer stops and its drain timeout passed. */
  start(handler: (envelope: Envelope, ctx: { signal: AbortSignal }) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}
