import type { Request, Response } from 'express';
import type { Principal } from '@mesh/auth';
import type { AgentRecord } from '@mesh/contract';
import type { BodyCharge } from '../admission/admission.js';
import type { StreamEventIds } from './stream-event-ids.js';
import type { RequestTimes } from './a2a-time.headers.js';

/** What the edge learns about a request on its way in (`res.locals`), read by the stages after it. */
export interface A2aLocals {
  principal?: Principal;
  agent?: AgentRecord;
  closed?: AbortSignal;
  streamIds?: StreamEventIds;
  /** The body's charge to the tenant's byte budget, and the bytes the parser read. */
  bodyCharge?: BodyCharge;
  bodyBytes?: number;
  /** A send's time headers, parsed once by the validator. */
  times?: RequestTimes;
}

export const localsOf = (res: Response): A2aLocals => res.locals as A2aLocals;

/** The authenticated caller's tenant, if any. */
export const callerTenant = (req: Request) => (req.res ? localsOf(req.res).principal?.tenant : undefined);

/**
 * The paths below `/a2a/:agentId` the JSON-RPC route (`post('/')`) serves: express's loose `/` is
 * `^\/\/?$`, so `/a2a/x//` is served as `/a2a/x` is, and must be admitted as it is.
 */
const JSON_RPC_PATH = /^\/{0,2}$/;

/** JSON-RPC is a POST to the agent's base URL; everything else under it is HTTP+JSON or the card. */
export const isJsonRpc = (req: Pick<Request, 'method' | 'path'>) => req.method === 'POST' && JSON_RPC_PATH.test(req.path);
