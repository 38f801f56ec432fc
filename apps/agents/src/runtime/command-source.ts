import type { Envelope } from '@mesh/contract';

/** Delivers envelopes of an agent's command channel (a @mesh/bus BusConsumer satisfies it). */
export interface CommandSource {
  start(handler: (envelope: Envelope) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}
