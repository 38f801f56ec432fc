import type { Request } from 'express';

/**
 * The A2A routes under an agent's base URL, as the SDK's express routers mount them (1.0 with and
 * without the `/{tenant}` prefix, 0.3 under `/v1`), and what each one does to the dispatcher: start
 * work (admission control) or hold a stream open (the per-tenant stream cap). This table is the one
 * definition the edge's validators, admission and stream cap read.
 *
 * Express matches routes case-insensitively and with an optional trailing slash, so the SDK would
 * serve `/MESSAGE:SEND` or `/tasks/x:SUBSCRIBE` as if spelled right. {@link routeOf} refuses every
 * spelling that express would match loosely to a route but that is not exactly that route's, so a
 * request the SDK serves is always one this table classified.
 */
export interface A2aRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** An express path: `:name` is a parameter, `\\:` a literal colon. */
  path: string;
  /** Also mounted under `/{tenant}` (the 1.0 routes). */
  tenantPrefix: boolean;
  startsWork?: boolean;
  opensStream?: boolean;
}

const route = (method: A2aRoute['method'], path: string, flags: Partial<A2aRoute> = {}): A2aRoute => ({
  method,
  path,
  tenantPrefix: !path.startsWith('/v1/'),
  ...flags,
});

/** The HTTP+JSON routes by operation: 1.0 names, 0.3 ones prefixed `v03`. */
export const A2A_ROUTES = {
  GetExtendedAgentCard: route('GET', '/extendedAgentCard'),
  SendMessage: route('POST', '/message\\:send', { startsWork: true }),
  SendStreamingMessage: route('POST', '/message\\:stream', { startsWork: true, opensStream: true }),
  SubscribeToTask: route('GET', '/tasks/:taskId\\:subscribe', { opensStream: true }),
  SubscribeToTaskPost: route('POST', '/tasks/:taskId\\:subscribe', { opensStream: true }),
  CancelTask: route('POST', '/tasks/:taskId\\:cancel'),
  GetTask: route('GET', '/tasks/:taskId'),
  ListTasks: route('GET', '/tasks'),
  CreateTaskPushNotificationConfig: route('POST', '/tasks/:taskId/pushNotificationConfigs'),
  ListTaskPushNotificationConfigs: route('GET', '/tasks/:taskId/pushNotificationConfigs'),
  GetTaskPushNotificationConfig: route('GET', '/tasks/:taskId/pushNotificationConfigs/:configId'),
  DeleteTaskPushNotificationConfig: route('DELETE', '/tasks/:taskId/pushNotificationConfigs/:configId'),
  v03GetCard: route('GET', '/v1/card'),
  v03SendMessage: route('POST', '/v1/message\\:send', { startsWork: true }),
  v03SendStreamingMessage: route('POST', '/v1/message\\:stream', { startsWork: true, opensStream: true }),
  v03CancelTask: route('POST', '/v1/tasks/:taskId\\:cancel'),
  v03Resubscribe: route('GET', '/v1/tasks/:taskId\\:subscribe', { opensStream: true }),
  v03ResubscribePost: route('POST', '/v1/tasks/:taskId\\:subscribe', { opensStream: true }),
  v03GetTask: route('GET', '/v1/tasks/:taskId'),
  v03CreatePushConfig: route('POST', '/v1/tasks/:taskId/pushNotificationConfigs'),
  v03ListPushConfigs: route('GET', '/v1/tasks/:taskId/pushNotificationConfigs'),
  v03GetPushConfig: route('GET', '/v1/tasks/:taskId/pushNotificationConfigs/:configId'),
  v03DeletePushConfig: route('DELETE', '/v1/tasks/:taskId/pushNotificationConfigs/:configId'),
} as const satisfies Record<string, A2aRoute>;

/** Where the agents' base URLs are mounted (`/a2a/{agentId}`); express also matches it in other letter cases. */
export const A2A_MOUNT = '/a2a';

/** The agent card, served by a prefix mount (`use`): anything below it matched too. */
export const CARD_PATH = '/.well-known/agent-card.json';

/** An express path as a regular expression: exact (`strict`), or as loose as express matches it. */
function compile(path: string, strict: boolean): RegExp {
  const source = path
    .split(/(\\:|:[A-Za-z_]\w*)/)
    .map((part) => (part === '\\:' ? ':' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return strict ? new RegExp(`^${source}$`) : new RegExp(`^${source}/?$`, 'i');
}

interface Compiled {
  route: A2aRoute;
  strict: RegExp;
  loose: RegExp;
}

const COMPILED: Compiled[] = Object.values(A2A_ROUTES as Record<string, A2aRoute>).flatMap((r) =>
  [r.path, ...(r.tenantPrefix ? [`/:tenant${r.path}`] : [])].map((p) => ({ route: r, strict: compile(p, true), loose: compile(p, false) })),
);
const CARD = {
  strict: new RegExp(`^${CARD_PATH.replace(/\./g, '\\.')}$`),
  loose: new RegExp(`^${CARD_PATH.replace(/\./g, '\\.')}(/.*)?$`, 'i'),
};

/** What a request under an agent's base URL is, by the table. */
export type RouteMatch =
  /** A route of the table or the card, spelled exactly; the flags are those of every route it matches. */
  | { kind: 'route'; startsWork: boolean; opensStream: boolean }
  /** A spelling express would serve as a route of the table although it is not exactly that route. */
  | { kind: 'misspelled' }
  /** Nothing of the table (the JSON-RPC base URL, an unknown path): left to the routers behind. */
  | { kind: 'other' };

/**
 * Classifies a request's path (relative to the agent's base URL, not decoded) against the table.
 * HEAD is matched as GET, as express does.
 */
export function routeOf(req: Pick<Request, 'method' | 'path'>): RouteMatch {
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const path = req.path;
  if (CARD.loose.test(path))
    return CARD.strict.test(path) ? { kind: 'route', startsWork: false, opensStream: false } : { kind: 'misspelled' };
  let matched = false;
  let startsWork = false;
  let opensStream = false;
  for (const c of COMPILED) {
    if (c.route.method !== method || !c.loose.test(path)) continue;
    // Whichever route express would pick, it must be spelled exactly.
    if (!c.strict.test(path)) return { kind: 'misspelled' };
    matched = true;
    startsWork ||= c.route.startsWork === true;
    opensStream ||= c.route.opensStream === true;
  }
  return matched ? { kind: 'route', startsWork, opensStream } : { kind: 'other' };
}
