import { A2AError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';

/** What a caller sees of a server fault: never the fault's own text (a database error, a stack). */
export const INTERNAL_ERROR_MESSAGE = 'internal error';

function hidden(err: unknown, log: (err: unknown) => void): unknown {
  if (err instanceof A2AError) return err;
  log(err);
  return new Error(INTERNAL_ERROR_MESSAGE);
}

async function* guardStream<T>(stream: AsyncGenerator<T>, log: (err: unknown) => void): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (err) {
    throw hidden(err, log);
  }
}

/**
 * The handler with its faults hidden: an error that is not an A2A error (a database or
 * programming fault) is logged and answered as -32603 / HTTP 500 "internal error", so no raw
 * error text reaches a caller. A2A errors (not found, invalid params…) pass unchanged.
 */
export function hideFaults(handler: A2ARequestHandler, log: (err: unknown) => void): A2ARequestHandler {
  return new Proxy(handler, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (err) {
          throw hidden(err, log);
        }
        if (result instanceof Promise) return result.catch((err: unknown) => Promise.reject(hidden(err, log)));
        const gen = result as AsyncGenerator<unknown> | undefined;
        if (gen && typeof gen.next === 'function' && typeof gen[Symbol.asyncIterator] === 'function') return guardStream(gen, log);
        return result;
      };
    },
  });
}
