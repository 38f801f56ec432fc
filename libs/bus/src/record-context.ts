import type { KafkaMessage } from 'kafkajs';
import { normalizeHeaders } from '@mesh/contract';
import type { MessageContext } from './consumer-types.js';
import type { PartitionState } from './partition-state.js';

/** The {@link MessageContext} of one handler call; string headers are built only when asked for. */
export class RecordContext implements MessageContext {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  private stringHeaders?: Record<string, string>;

  constructor(
    state: PartitionState,
    private readonly message: KafkaMessage,
    readonly attempt: number,
    readonly signal: AbortSignal,
  ) {
    this.topic = state.topic;
    this.partition = state.partition;
    this.offset = message.offset;
  }

  get key(): string | null {
    return this.message.key?.toString() ?? null;
  }

  get headers(): Record<string, string> {
    this.stringHeaders ??= normalizeHeaders(this.message.headers);
    return this.stringHeaders;
  }
}
