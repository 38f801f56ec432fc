import type { Request, RequestHandler, Response } from 'express';
import type { AgentRecord } from '@mesh/contract';
import type { BodyCharge, Refusal } from '../admission/admission.js';
import { declaredLength, hasBody, isEncoded, parseByteSize } from '@mesh/service';
import { routeOf } from './a2a.routes.js';
import { sendRefusal } from './a2a-errors.responder.js';
import { isJsonRpc, localsOf } from './a2a-request.context.js';

/** The edge's admission control: what it may refuse, each undefined = never refused. */
export interface A2aAdmission {
  /** Admission control of new work; undefined = admitted. */
  admit?(tenant: string, record: AgentRecord): Promise<Refusal | undefined>;
  /**
   * Charges a request body to the tenant's byte budget before it is read (`declaredBytes`: the
   * Content-Length, undefined for a chunked body; `agentId` as the path names it): the refusal, or
   * the charge to settle with the bytes actually read.
   */
  chargeBody?(tenant: string, declaredBytes: number | undefined, agentId: string): Refusal | BodyCharge;
  /**
   * Takes one of the tenant's open-stream slots for a streaming request (its release is called
   * when the response closes, however the stream ended), or the refusal when none is left.
   */
  reserveStream?(tenant: string, record: AgentRecord): (() => void) | Refusal;
}

/** What a request does to the dispatcher. */
export interface RequestEffect {
  startsWork: boolean;
  opensStream: boolean;
}

const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);
const STREAM_METHODS = new Set(['SendStreamingMessage', 'SubscribeToTask', 'message/stream', 'tasks/resubscribe']);

/**
 * What a request does to the dispatcher: start work (SendMessage / SendStreamingMessage, 0.3
 * message/send, message/stream) and hold a stream open (SendStreamingMessage / SubscribeToTask,
 * 0.3 message/stream, tasks/resubscribe) — by its JSON-RPC method, else by the route table.
 * Undefined: a path the table refuses (spelled unlike its route).
 */
export function effectOf(req: Request): RequestEffect | undefined {
  if (isJsonRpc(req)) {
    const body = req.body as { method?: unknown; id?: unknown } | undefined;
    // A notification (no id) is never run (answered 204 by the envelope check): it starts nothing.
    if (typeof body !== 'object' || body === null || !('id' in body)) return { startsWork: false, opensStream: false };
    const method = String(body.method);
    return { startsWork: SEND_METHODS.has(method), opensStream: STREAM_METHODS.has(method) };
  }
  const match = routeOf(req);
  if (match.kind === 'misspelled') return undefined;
  return match.kind === 'route' ? match : { startsWork: false, opensStream: false };
}

/**
 * The byte budget, charged from the headers before the body is read: a refused body is never read
 * and its connection closes (drained, a tenant over its budget would keep the dispatcher reading
 * at wire speed, the budget bounding nothing). A declared length over the body limit is not
 * charged: the body reader refuses it (413) unread.
 */
export function chargeBody(admission: A2aAdmission, bodyLimit: string): RequestHandler {
  const maxBodyBytes = parseByteSize(bodyLimit);
  return (req, res, next) => {
    const locals = localsOf(res);
    if (!admission.chargeBody || !locals.principal || !hasBody(req)) return next();
    const declared = declaredLength(req);
    if (declared !== undefined && !(declared <= maxBodyBytes)) return next();
    // A compressed body costs what it decodes to, up to the limit: charged as one of unknown length
    // (the limit, the unused part given back once read), so concurrent small encoded bodies that
    // decode large cannot pass on their wire size.
    const charge = admission.chargeBody(
      locals.principal.tenant,
      isEncoded(req) ? undefined : declared,
      String((req.params as Record<string, string>).agentId),
    );
    if (!('settle' in charge)) {
      res.setHeader('Connection', 'close');
      return sendRefusal(req, res, charge);
    }
    locals.bodyCharge = charge;
    next();
  };
}

/**
 * Takes the tenant's stream slot of a request that opens a stream (released when the response
 * closes); false when refused (the refusal is answered).
 */
export function reserveStreamSlot(
  admission: A2aAdmission,
  req: Request,
  res: Response,
  record: AgentRecord,
  effect: RequestEffect,
): boolean {
  const principal = localsOf(res).principal;
  if (!admission.reserveStream || !principal || !effect.opensStream) return true;
  const slot = admission.reserveStream(principal.tenant, record);
  if (typeof slot !== 'function') {
    sendRefusal(req, res, slot);
    return false;
  }
  res.once('close', slot);
  return true;
}

/** Runs `serve` once a request that starts work is admitted (any other at once); a refusal is answered instead. */
export function admitWork(
  admission: A2aAdmission,
  req: Request,
  res: Response,
  record: AgentRecord,
  effect: RequestEffect,
  serve: () => void,
  fail: (err: unknown) => void,
): void {
  const principal = localsOf(res).principal;
  if (!admission.admit || !principal || !effect.startsWork) return serve();
  admission.admit(principal.tenant, record).then((refusal) => (refusal ? sendRefusal(req, res, refusal) : serve()), fail);
}
