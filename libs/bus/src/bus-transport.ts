import { Catch, type ArgumentsHost, type RpcExceptionFilter } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy } from '@nestjs/microservices';
import type { Kafka } from 'kafkajs';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import { MeshError, type Envelope } from '@mesh/contract';
import { BusConsumer } from './bus-consumer.js';
import type { BusConsumerOptions, BusConsumerStats, MessageContext } from './consumer-types.js';

/** What `@Ctx()` gives an `@EventPattern` handler: the record's {@link MessageContext}. */
export class BusContext extends BaseRpcContext<[MessageContext]> {
  get message(): MessageContext {
    return this.args[0];
  }
}

/**
 * Nest transport over {@link BusConsumer}: each envelope goes to the `@EventPattern(kind)` handler
 * (`'task.run'`, `'task.cancel'`, …) with the envelope as payload and a {@link BusContext}.
 * A handler's rejection is retried or dead-lettered like any bus handler's; register
 * {@link BusExceptionFilter} so Nest hands the original error (and its `retryable`) back
 * instead of a generic "Internal server error". An envelope kind without a handler is dead-lettered.
 */
export class KafkaBusTransport extends Server implements CustomTransportStrategy {
  private consumer?: BusConsumer;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: BusConsumerOptions,
  ) {
    super();
    this.transportId = Symbol.for('mesh.bus');
  }

  listen(callback: (err?: unknown) => void): void {
    const consumer = new BusConsumer(this.kafka, this.options);
    this.consumer = consumer;
    consumer
      .start((envelope, ctx) => this.route(envelope, ctx))
      .then(
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
    const handler = this.getHandlerByPattern(envelope.kind);
    if (!handler) {
      throw new MeshError('NO_HANDLER', `no @EventPattern('${envelope.kind}') handler`, { retryable: false });
    }
    const result: unknown = await handler(envelope, new BusContext([ctx]));
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
