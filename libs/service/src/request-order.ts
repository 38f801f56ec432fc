import type { Socket } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Node parses every request a client pipelines on one connection and hands each to the app at
 * once, while their answers wait in line. A request behind one answered with `Connection: close`
 * would then run (authenticated, handled, its effects stored) and never be answered: the socket
 * closes after the earlier answer. Served in turn, a request runs only once every earlier request
 * on its connection is answered, and not at all when one of those answers closed the connection.
 */

interface ConnectionTurns {
  /** A request of the connection is running (its answer not yet written). */
  busy: boolean;
  /** An answer closed (or is closing) the connection: nothing more is run on it. */
  closed: boolean;
  waiting: Array<() => void>;
}

const TURNS = Symbol('connectionTurns');

type TurnSocket = Socket & { [TURNS]?: ConnectionTurns };

/** Whether the connection ends with this (finished or abandoned) answer. */
function connectionEnds(res: Response, socket: Socket): boolean {
  // Node ends the socket (before this runs: its own 'finish' listener comes first) after an answer
  // marked last: `Connection: close` set by a handler, asked for by the client, or HTTP/1.0.
  if (socket.destroyed || !socket.writable) return true;
  return /(^|,)\s*close\s*(,|$)/i.test(String(res.getHeader('connection') ?? ''));
}

/**
 * First middleware of a service: runs each connection's requests one at a time, in order. A
 * pipelined request waits for the answers before it (they are written in that order anyway) and is
 * dropped unrun once one of them closes the connection.
 */
export function serveInOrder(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const socket = req.socket as TurnSocket;
    const turns = (socket[TURNS] ??= { busy: false, closed: false, waiting: [] });
    if (turns.closed) return;
    const run = () => {
      turns.busy = true;
      let over = false;
      const answered = () => {
        if (over) return;
        over = true;
        if (connectionEnds(res, socket)) {
          turns.closed = true;
          turns.waiting.length = 0;
          return;
        }
        turns.busy = false;
        turns.waiting.shift()?.();
      };
      res.once('finish', answered);
      res.once('close', answered);
      next();
    };
    if (turns.busy) turns.waiting.push(run);
    else run();
  };
}
