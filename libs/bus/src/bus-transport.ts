import { Catch, type ArgumentsHost, type RpcExceptionFilter } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy } from '@nestjs/microservices';
import type { Kafka } from 'kafkajs';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import { MeshError, type Envelope } from '@mesh/contract';
import { BusConsumer } from './bus-consumer.js';
import type { BusConsumerOptions, BusConsumerStats, KeyedRecord, MessageContext } from './consumer-types.js';

/** What `@Ctx()` gives an `@EventPattern` handler: the record's {@link MessageContext}. */
export class BusContext extends BaseRpcContext<[MessageContext]> {
  get message(): MessageContext {
    return this.args[0];
  }
}

/** What `@Ctx()` gives the {@link KEYED_BATCH_PATTERN} handler: each record's context, in payload order. */
export class BusBatchContext extends BaseRpcContext<[readonly MessageContext[]]> {
  get messages(): readonly MessageContext[] {
    return this.args[0];
  }
}

/**
 * The pattern of the one handler of a transport in batch mode (`@EventPattern(KEYED_BATCH_PATTERN)`):
 * its payload is an `Envelope[]` of ONE ordering key in offset order, whatever their kinds.
 */
export const KEYED_BATCH_PATTERN = 'mesh.bus.keyed-batch';

/** Options of {@link KafkaBusTransport}: the consumer's, and how records reach the handlers. */
export interface KafkaBusTransportOptions extends BusConsumerOptions {
  /**
   * Consecutive queued records of one ordering key go together (up to `maxBatchPerKey`, see
   * `BusConsumer.startBatches`) to the {@link KEYED_BATCH_PATTERN} handler with a
   * {@link BusBatchContext}, so it can do one piece of work for all of them. If it rejects, the
   * records come again one at a time (arrays of one), each with its own retries and dead-lettering.
   * Default false: each envelope goes to the handler of its kind.
   */
  batches?: boolean;
}

/**
 * Nest transport over {@link BusConsumer}: each envelope goes to the `@EventPattern(kind)` handler
 * (`'task.run'`, `'task.cancel'`, …) with the envelope as payload and a {@link BusContext}, or, in
 * batch mode, a key's envelopes to the {@link KEYED_BATCH_PATTERN} handler.
 * A handler's rejection is retried or dead-lettered like any bus handler's; register
 * {@link BusExceptionFilter} so Nest hands the original error (and its `retryable`) back
 * instead of a generic "Internal server error". An envelope kind without a handler is dead-lettered.
 */
export class KafkaBusTransport extends Server implements CustomTransportStrategy {
  private consumer?: BusConsumer;
  /** Handlers found by pattern: Nest's lookup tries JSON.parse on every call (a thrown error per record). */
  private readonly handlerCache = new Map<string, NonNullable<ReturnType<Server['getHandlerByPattern']>>>();

  constructor(
    private readonly kafka: Kafka,
    private readonly options: KafkaBusTransportOptions,
  ) {
    super();
    this.transportId = Symbol.for('mesh.bus');
  }

  listen(callback: (err?: unknown) => void): void {
    // A second listen (an app started twice) must not join the group with a second consumer.
    if (this.consumer) return callback();
    const { batches, ...consumerOptions } = this.options;
    const consumer = new BusConsumer(this.kafka, consumerOptions);
    this.consumer = consumer;
    const started = batches
      ? consumer.startBatches((records) => this.routeBatch(records))
      : consumer.start((envelope, ctx) => this.route(envelope, ctx));
    started.then(
      () => callback(),
      (err: unknown) => callback(err),
    );
  }

  /** Drains and leaves the group (called by Nest on app.close(), e.g. on SIGTERM with shutdown hooks). */
  async close(): Promise<void> {
    await this.consumer?.stop();
  }

  /** The transport emits no events of its own. */
  on(): void {}

  unwrap<T>(): T {
    if (!this.consumer) throw new Error('KafkaBusTransport is not listening');
    return this.consumer as T;
  }

  /** Consumer gauges and counters (undefined before listen). */
  stats(): BusConsumerStats | undefined {
    return this.consumer?.stats();
  }

  private async route(envelope: Envelope, ctx: MessageContext): Promise<void> {
    await this.call(envelope.kind, envelope, new BusContext([ctx]));
  }

  private async routeBatch(records: readonly KeyedRecord[]): Promise<void> {
    const envelopes = records.map((r) => r.envelope);
    await this.call(KEYED_BATCH_PATTERN, envelopes, new BusBatchContext([records.map((r) => r.ctx)]));
  }

  private async call(pattern: string, payload: unknown, ctx: BaseRpcContext): Promise<void> {
    const handler = this.handlerCache.get(pattern) ?? this.getHandlerByPattern(pattern);
    if (handler) this.handlerCache.set(pattern, handler);
    if (!handler) {
      throw new MeshError('NO_HANDLER', `no @EventPattern('${pattern}') handler`, { retryable: false });
    }
    const result: unknown = await handler(payload, ctx);
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
  }
}

/**
 * Passes handler errors through unchanged, so the bus sees MeshError's `retryable` (Nest's default
 * filter replaces every non-RpcException with a generic object, which is always retried).
 */
@Catch()
export class BusExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
