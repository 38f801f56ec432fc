import { withJsonNames } from './proto-json-names.js';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { isJsonObject } from '@mesh/contract';
import { A2A_PARAMS, historyLength, idProblem, A2A_TASK_STATE_ENUM, type A2aMethod } from './a2a-request.schemas.js';
import { LEGACY_BODIES, LEGACY_PARAMS } from './a2a-legacy.schemas.js';
import { A2A_ROUTES, type A2aRoute } from './a2a.routes.js';
import { parseTimeHeaders } from './a2a-time.headers.js';
import { localsOf } from './a2a-request.context.js';

/**
 * Validation of every A2A request at the edge, before the SDK parses it and before anything is
 * stored: JSON-RPC params by method, HTTP+JSON path, query and body by route, and the deadline
 * headers of the send methods. A refusal names the field (`params.message.parts[0]: …` on
 * JSON-RPC, `message.parts[0]: …` on HTTP+JSON) and carries it as ErrorInfo metadata `field`.
 */

/** Answers a refusal in the binding's format (JSON-RPC -32602, HTTP 400). */
export type Refuse = (req: Request, res: Response, err: RequestMalformedError) => void;

const refusal = (field: string, problem: string, metadata: Record<string, string> = {}) =>
  new RequestMalformedError({ message: `${field}: ${problem}`, metadata: { field: field.slice(0, 512), ...metadata } });

/** The authenticated caller's tenant (the principal the router resolved), if known. */
export type CallerTenant = (req: Request) => string | undefined;

/**
 * Every `tenant` a request carries (params or body, the push config given with a message, the
 * HTTP+JSON `/{tenant}` path prefix and `?tenant=`) may only repeat the caller's tenant: one that
 * names another tenant is refused wherever it is, never silently ignored. The SDK hands the
 * handler params' or the path's as the call's tenant; nothing after this checks it again.
 */
function tenantProblem(req: Request, callerTenant: CallerTenant, fields: Array<[string, unknown]>): RequestMalformedError | undefined {
  const caller = callerTenant(req);
  if (caller === undefined) return undefined;
  for (const [field, value] of fields) {
    if (typeof value === 'string' && value !== '' && value !== caller) {
      return refusal(field, `"${value.slice(0, 64)}" does not match the authenticated tenant`, { conflict: 'TENANT_MISMATCH' });
    }
  }
  return undefined;
}

/** The tenants of a params object or body: its own and its push config's. */
function tenantsOf(params: unknown, prefix: string): Array<[string, unknown]> {
  if (!isJsonObject(params)) return [];
  const cfg = isJsonObject(params.configuration) ? params.configuration.taskPushNotificationConfig : undefined;
  const at = (name: string) => (prefix ? `${prefix}.${name}` : name);
  return [
    [at('tenant'), params.tenant],
    [at('configuration.taskPushNotificationConfig.tenant'), isJsonObject(cfg) ? cfg.tenant : undefined],
  ];
}

/** `a.b[0]["odd key"]`: a path as a caller would write it; odd keys quoted and shortened. */
function fieldName(prefix: string, path: ReadonlyArray<PropertyKey>): string {
  let out = prefix;
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][\w$]{0,63}$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${JSON.stringify(String(seg).slice(0, 64))}]`;
  }
  return out || 'body';
}

/** The first problem zod found, as a refusal naming the field. */
function firstIssue(error: z.ZodError, prefix: string, version = '1.0'): RequestMalformedError {
  const issue = error.issues[0]!;
  const field = fieldName(prefix, issue.path);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => JSON.stringify(k.slice(0, 64))).join(', ');
    return refusal(field, `unknown field ${keys} (A2A ${version} JSON uses lowerCamelCase names)`);
  }
  if (issue.code === 'invalid_type') {
    return refusal(field, / received undefined$/.test(issue.message) ? 'is required' : issue.message.replace(/^Invalid input: /, ''));
  }
  return refusal(field, issue.message.replace(/^Invalid input: /, ''));
}

/**
 * The time headers of a send (A2A-Deadline-Ms, x-request-timeout-ms), parsed here once: the
 * handler reads the values (A2aLocals.times), never the headers. The refusal, if any.
 */
function readTimeHeaders(req: Request): RequestMalformedError | undefined {
  const times = parseTimeHeaders(req.headers);
  if (times instanceof RequestMalformedError) return times;
  if (req.res) localsOf(req.res).times = times;
  return undefined;
}

const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage']);

/** Validates the params of one JSON-RPC request; undefined = valid. */
export function checkJsonRpc(
  method: string,
  params: unknown,
  req?: Request,
  callerTenant?: CallerTenant,
): RequestMalformedError | undefined {
  const key = method === 'SendStreamingMessage' ? 'SendMessage' : method;
  if (!Object.hasOwn(A2A_PARAMS, key)) return undefined; // the SDK answers -32601
  if (params === undefined && key === 'GetExtendedAgentCard') return undefined;
  if (!isJsonObject(params)) return refusal('params', 'must be a JSON object');
  if (req && SEND_METHODS.has(method)) {
    const bad = readTimeHeaders(req);
    if (bad) return bad;
  }
  const r = A2A_PARAMS[key as A2aMethod].safeParse(params);
  if (!r.success) return firstIssue(r.error, 'params');
  return req && callerTenant ? tenantProblem(req, callerTenant, tenantsOf(params, 'params')) : undefined;
}

/**
 * Whether a request is A2A 0.3: it says so, or it names no version (0.3 had no A2A-Version
 * header). The router has already normalised the header to `major.minor`.
 */
export const isLegacyRequest = (req: Request): boolean => {
  const v = req.header('A2A-Version');
  return v === undefined || v === '' || v === '0.3';
};

const LEGACY_SEND = new Set(['message/send', 'message/stream']);

/** Validates the params of one A2A 0.3 JSON-RPC request; undefined = valid. */
export function checkLegacyJsonRpc(method: string, params: unknown, req?: Request): RequestMalformedError | undefined {
  const key = method === 'message/stream' ? 'message/send' : method;
  if (!Object.hasOwn(LEGACY_PARAMS, key)) return undefined; // the SDK answers -32601
  if (!isJsonObject(params)) return refusal('params', 'must be a JSON object');
  if (req && LEGACY_SEND.has(method)) {
    const bad = readTimeHeaders(req);
    if (bad) return bad;
  }
  const r = LEGACY_PARAMS[key as keyof typeof LEGACY_PARAMS].safeParse(params);
  return r.success ? undefined : firstIssue(r.error, 'params', '0.3');
}

/** Renames proto field names in `holder[key]` to their JSON names (see withJsonNames); the refusal, if any. */
function jsonNames(holder: object, key: string, path: string): RequestMalformedError | undefined {
  const h = holder as Record<string, unknown>;
  if (!isJsonObject(h[key])) return undefined;
  try {
    h[key] = withJsonNames(h[key], path);
    return undefined;
  } catch (err) {
    if (err instanceof RequestMalformedError) return err;
    throw err;
  }
}

/** Express middleware for the JSON-RPC binding (after the envelope check and the version gate). */
export function jsonRpcValidator(refuse: Refuse, callerTenant: CallerTenant): RequestHandler {
  return (req, res, next) => {
    const body = req.body as { method?: unknown; params?: unknown } | undefined;
    if (!isJsonObject(body) || typeof body.method !== 'string') return next();
    if (!isLegacyRequest(req)) {
      const renamed = jsonNames(body as Record<string, unknown>, 'params', 'params');
      if (renamed) return refuse(req, res, renamed);
    }
    const bad = isLegacyRequest(req)
      ? checkLegacyJsonRpc(body.method, body.params, req)
      : checkJsonRpc(body.method, body.params, req, callerTenant);
    if (bad) return refuse(req, res, bad);
    next();
  };
}

type Check = (req: Request) => RequestMalformedError | undefined;

/** Path parameters that are ids (`tenant`, `taskId`, `configId`). */
function pathIds(req: Request): RequestMalformedError | undefined {
  for (const [name, value] of Object.entries(req.params as Record<string, string>)) {
    const p = idProblem(value);
    if (p) return refusal(name, p);
  }
  return undefined;
}

/** One value of a query parameter (a repeat is refused), or undefined when absent or empty (the SDK's reading). */
function queryValue(req: Request, name: string): string | RequestMalformedError | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') return refusal(name, 'must be given once');
  return v;
}

/** Query parameters as typed params; integers and booleans are parsed strictly. */
function queryParams(
  req: Request,
  spec: Record<string, 'string' | 'int' | 'bool' | 'state'>,
): Record<string, unknown> | RequestMalformedError {
  const out: Record<string, unknown> = {};
  for (const [name, kind] of Object.entries(spec)) {
    const v = queryValue(req, name);
    if (v instanceof RequestMalformedError) return v;
    if (v === undefined) continue;
    if (kind === 'int') {
      if (!/^\d{1,10}$/.test(v)) return refusal(name, 'must be a non-negative integer');
      out[name] = Number(v);
    } else if (kind === 'bool') {
      if (v !== 'true' && v !== 'false') return refusal(name, 'must be true or false');
      out[name] = v === 'true';
    } else if (kind === 'state') {
      out[name] = /^\d{1,2}$/.test(v) ? Number(v) : v;
      if (typeof out[name] === 'number' && (out[name] as number) >= A2A_TASK_STATE_ENUM.length) out[name] = v;
    } else out[name] = v;
  }
  return out;
}

/** A body checked against a method's schema; field names relative to the body. */
function bodyAs(method: A2aMethod, body: unknown, extra: Record<string, unknown> = {}): RequestMalformedError | undefined {
  const value = body === undefined ? {} : body;
  if (!isJsonObject(value)) return refusal('body', 'must be a JSON object');
  const r = A2A_PARAMS[method].safeParse({ ...value, ...extra });
  return r.success ? undefined : firstIssue(r.error, '');
}

const all =
  (...checks: Check[]): Check =>
  (req) => {
    for (const c of checks) {
      const bad = c(req);
      if (bad) return bad;
    }
    return undefined;
  };

const tenantQuery: Check = (req) => {
  const v = queryValue(req, 'tenant');
  if (typeof v !== 'string') return v;
  const p = idProblem(v);
  return p ? refusal('tenant', p) : undefined;
};

const LIST_QUERY = {
  contextId: 'string',
  status: 'state',
  pageSize: 'int',
  pageToken: 'string',
  historyLength: 'int',
  statusTimestampAfter: 'string',
  includeArtifacts: 'bool',
} as const;

const verb = (method: A2aRoute['method']) => method.toLowerCase() as 'get' | 'post' | 'delete';

/**
 * Express router for the HTTP+JSON binding: the route table's patterns (`A2A_ROUTES`, with and without the
 * `/{tenant}` prefix), each validated, then on to the SDK's handler. Unmatched paths pass through
 * to its 404.
 */
export function restValidator(refuse: Refuse, callerTenant: CallerTenant): express.Router {
  const router = express.Router();
  const tenants: Check = (req) =>
    tenantProblem(req, callerTenant, [
      ['tenant', (req.params as Record<string, string | undefined>).tenant],
      ['tenant', (req.query as Record<string, unknown>).tenant],
      ...tenantsOf(req.body, ''),
    ]);
  const route = ({ method, path }: A2aRoute, check: Check) => {
    const handler: RequestHandler = (req, res, next) => {
      // A body of another media type is the SDK's ContentTypeNotSupported, whatever it holds.
      const mediaType = req.header('content-type')?.split(';', 1)[0]!.trim().toLowerCase();
      if (mediaType !== undefined && mediaType !== 'application/json' && mediaType !== 'application/a2a+json') return next('router');
      const renamed = jsonNames(req, 'body', '');
      if (renamed) return refuse(req, res, renamed);
      const bad = all(pathIds, tenantQuery, check, tenants)(req);
      if (bad) return refuse(req, res, bad);
      next('router');
    };
    router[verb(method)](path, handler);
    router[verb(method)](`/:tenant${path}`, handler);
  };
  const none: Check = () => undefined;
  const send: Check = (req) => readTimeHeaders(req) ?? bodyAs('SendMessage', req.body);
  route(A2A_ROUTES.GetExtendedAgentCard, none);
  route(A2A_ROUTES.SendMessage, send);
  route(A2A_ROUTES.SendStreamingMessage, send);
  // The SDK ignores these bodies; one that is given must still be a valid request of the method.
  route(A2A_ROUTES.SubscribeToTask, none);
  route(A2A_ROUTES.SubscribeToTaskPost, (req) => bodyAs('SubscribeToTask', req.body, { id: req.params.taskId }));
  route(A2A_ROUTES.CancelTask, (req) => bodyAs('CancelTask', req.body, { id: req.params.taskId }));
  route(A2A_ROUTES.GetTask, (req) => {
    const q = queryParams(req, { historyLength: 'int' });
    if (q instanceof RequestMalformedError) return q;
    const r = A2A_PARAMS.GetTask.safeParse({ id: 'x', ...q });
    return r.success ? undefined : firstIssue(r.error, '');
  });
  route(A2A_ROUTES.ListTasks, (req) => {
    const q = queryParams(req, LIST_QUERY);
    if (q instanceof RequestMalformedError) return q;
    const r = A2A_PARAMS.ListTasks.safeParse(q);
    return r.success ? undefined : firstIssue(r.error, '');
  });
  route(A2A_ROUTES.CreateTaskPushNotificationConfig, (req) =>
    bodyAs('CreateTaskPushNotificationConfig', req.body, { taskId: req.params.taskId }),
  );
  route(A2A_ROUTES.ListTaskPushNotificationConfigs, none);
  route(A2A_ROUTES.GetTaskPushNotificationConfig, none);
  route(A2A_ROUTES.DeleteTaskPushNotificationConfig, none);
  return router;
}

/**
 * Express router for the A2A 0.3 HTTP+JSON routes (`/v1/...`, as the SDK's compatibility layer
 * mounts them), each validated, then on to the SDK. Requests of another version pass untouched.
 */
export function legacyRestValidator(refuse: Refuse): express.Router {
  const router = express.Router();
  const route = ({ method, path }: A2aRoute, check: Check) => {
    router[verb(method)](path, (req, res, next) => {
      if (!isLegacyRequest(req)) return next('router');
      const bad = all(pathIds, check)(req);
      if (bad) return refuse(req, res, bad);
      next('router');
    });
  };
  const none: Check = () => undefined;
  const body =
    (schema: z.ZodType): Check =>
    (req) => {
      if (!isJsonObject(req.body)) return refusal('body', 'must be a JSON object (sent as application/json)');
      const r = schema.safeParse(req.body);
      return r.success ? undefined : firstIssue(r.error, '', '0.3');
    };
  // 0.3 clients send `null` (or nothing) as the body of a POST without parameters.
  const emptyBody: Check = (req) =>
    req.body === undefined || req.body === null || isJsonObject(req.body) ? undefined : refusal('body', 'must be a JSON object or null');
  const send: Check = (req) => readTimeHeaders(req) ?? body(LEGACY_BODIES.send)(req);
  route(A2A_ROUTES.v03GetCard, none);
  route(A2A_ROUTES.v03SendMessage, send);
  route(A2A_ROUTES.v03SendStreamingMessage, send);
  route(A2A_ROUTES.v03CancelTask, emptyBody);
  route(A2A_ROUTES.v03Resubscribe, none);
  route(A2A_ROUTES.v03ResubscribePost, emptyBody);
  route(A2A_ROUTES.v03GetTask, (req) => {
    for (const name of ['historyLength', 'history_length']) {
      const v = queryValue(req, name);
      if (v instanceof RequestMalformedError) return v;
      if (v === undefined) continue;
      const r = historyLength.safeParse(/^\d{1,10}$/.test(v) ? Number(v) : v);
      if (!r.success) return firstIssue(r.error, name, '0.3');
    }
    return undefined;
  });
  // The SDK takes the task from the body's `name` alone: the path is the authority, so a name that
  // is absent is filled in from it, and one naming another task is refused.
  route(A2A_ROUTES.v03CreatePushConfig, (req) => {
    const bad = body(LEGACY_BODIES.pushConfig)(req);
    if (bad) return bad;
    const b = req.body as { name?: string };
    const taskId = String(req.params.taskId);
    if (b.name === undefined || b.name === '') b.name = `tasks/${taskId}`;
    else if (b.name !== `tasks/${taskId}` && !b.name.startsWith(`tasks/${taskId}/pushNotificationConfigs/`))
      return refusal('name', `must name the task of the path (tasks/${taskId.slice(0, 64)}), or be left out`);
    return undefined;
  });
  route(A2A_ROUTES.v03ListPushConfigs, none);
  route(A2A_ROUTES.v03GetPushConfig, none);
  route(A2A_ROUTES.v03DeletePushConfig, none);
  return router;
}
