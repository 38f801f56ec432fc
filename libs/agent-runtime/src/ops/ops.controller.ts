import { hostname } from 'node:os';
import { timingSafeEqual } from 'node:crypto';
import {
  Body,
  Controller,
  Get,
  HttpException,
  Inject,
  Module,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  type DynamicModule,
} from '@nestjs/common';
import type { Request } from 'express';
import {
  bearerToken,
  hasControlCharacter,
  hasLoneSurrogate,
  isLedgerTaskState,
  isUnknownResolution,
  LEDGER_TASK_STATES,
  OPS_TASKS_MAX_LIMIT,
  UNKNOWN_RESOLUTIONS,
  type OpsLag,
  type OpsResolved,
  type OpsTaskDetail,
  type OpsTasks,
  type OpsUnknowns,
  type OpsWorkers,
} from '@mesh/contract';
import type { EffectLedger } from '@mesh/tool-gateway';
import { AgentsRuntime } from '../runtime/agents-runtime.js';
import type { OpsSampler, WorkerView } from './ops-sampler.js';
import type { TaskRecords } from './task-records.js';

/** What the operator endpoints work with. */
export interface OpsDeps {
  sampler: OpsSampler;
  ledger: EffectLedger;
  workers: () => WorkerView[];
  /** The ledgers' view of tasks (executions, attempts, tool calls) across tenants. */
  records: TaskRecords;
  workerId: string;
  /** Every /ops request needs `Authorization: Bearer <token>`; unset, every /ops request is refused. */
  token?: string;
}

export const OPS_DEPS = Symbol('OPS_DEPS');

const sameSecret = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Longest id, key or filter value /ops takes (idempotency keys are the longest: tenant, task, tool and a hash). */
const OPS_TEXT_MAX = 1024;

/**
 * A path segment, query value or body text checked before it reaches a query: Postgres `text`
 * holds neither NUL nor a lone surrogate (it would answer a 500 with its own error), and no id
 * holds a control character. Refused with 400 naming the field.
 */
function checkedText(field: string, value: string, opts: { allowLineBreaks?: boolean; max?: number } = {}): string {
  const max = opts.max ?? OPS_TEXT_MAX;
  const problem =
    value.length > max
      ? `at most ${max} characters`
      : hasControlCharacter(value, opts) || hasLoneSurrogate(value)
        ? 'no control characters (NUL included) or lone surrogates'
        : undefined;
  if (problem) throw new HttpException({ error: `${field}: ${problem}` }, 400);
  return value;
}

/**
 * Refuses (HttpException 401, `{ error }`) a request that does not carry exactly one
 * `Authorization: Bearer <token>` with the ops token; with no token configured, every request.
 */
export function checkOpsCredential(req: Request, token: string | undefined): void {
  // No token configured: the endpoints are off, never open (they read every tenant's tasks and settle side effects).
  if (!token)
    throw new HttpException(
      { error: 'ops endpoints are disabled: set AGENTS_OPS_TOKEN to enable them (Authorization: Bearer <token>)' },
      401,
    );
  // Node keeps the first of repeated Authorization headers; a proxy in front may have checked another.
  let credentials = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'authorization') credentials += 1;
  if (credentials > 1) throw new HttpException({ error: 'send exactly one Authorization header' }, 401);
  const presented = bearerToken(req.header('authorization'));
  if (!presented || !sameSecret(presented, token))
    throw new HttpException({ error: 'ops token required: Authorization: Bearer <AGENTS_OPS_TOKEN>' }, 401);
}

/**
 * Operator endpoints of the agents runtime (the CLI and console call them): workers with in-flight
 * and paused partitions, consumer lag per agent, and the open unknown outcomes with a manual
 * resolution for the ones the reconciler cannot settle (the server has no reconcile tool).
 */
@Controller('ops')
export class OpsController {
  constructor(@Inject(OPS_DEPS) private readonly deps: OpsDeps) {}

  private guard(req: Request): void {
    checkOpsCredential(req, this.deps.token);
  }

  @Get('workers')
  workers(@Req() req: Request): OpsWorkers {
    this.guard(req);
    return {
      workerId: this.deps.workerId,
      host: hostname(),
      // HTTP listens only once every consumer started, so each has stats here.
      agents: this.deps.workers().flatMap((w) => {
        const s = w.stats();
        if (!s) return [];
        return {
          agentId: w.agentId,
          groupId: w.groupId,
          topic: w.topic,
          turnsInFlight: w.inFlight(),
          inFlight: s.inFlight,
          buffered: s.buffered,
          pausedPartitions: s.pausedPartitions,
          assignedPartitions: s.assignedPartitions,
          inFlightByTenant: s.inFlightByTenant,
          processed: s.processed,
          deadLettered: s.deadLettered,
          skippedFinished: s.skippedFinished,
        };
      }),
    };
  }

  @Get('lag')
  async lag(@Req() req: Request): Promise<OpsLag> {
    this.guard(req);
    return { agents: await this.deps.sampler.lag() };
  }

  @Get('unknowns')
  async unknowns(@Req() req: Request): Promise<OpsUnknowns> {
    this.guard(req);
    const entries = await this.deps.sampler.unknowns();
    return {
      unknowns: entries.map((e) => ({
        key: e.key,
        tenant: e.tenant,
        taskId: e.taskId,
        executionId: e.executionId,
        tool: e.tool,
        reason: e.reason ?? null,
        attempts: e.attempts,
      })),
    };
  }

  /** Tasks by their latest turn in the execution ledger, newest first, across tenants (`tenant`, `agent`, `state` narrow it). */
  @Get('tasks')
  async tasks(@Req() req: Request, @Query() q: Record<string, unknown>): Promise<OpsTasks> {
    this.guard(req);
    const text = (name: string): string | undefined => {
      const v = q[name];
      if (v === undefined || v === '') return undefined;
      if (typeof v !== 'string') throw new HttpException({ error: `${name} must be given once, as text` }, 400);
      return checkedText(name, v);
    };
    const state = text('state');
    if (state !== undefined && !isLedgerTaskState(state))
      throw new HttpException({ error: `state must be one of ${LEDGER_TASK_STATES.join(', ')}` }, 400);
    const limitText = text('limit') ?? '50';
    const limit = Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > OPS_TASKS_MAX_LIMIT)
      throw new HttpException({ error: `limit must be an integer from 1 to ${OPS_TASKS_MAX_LIMIT}` }, 400);
    const tenant = text('tenant');
    const agentId = text('agent');
    return {
      tasks: await this.deps.records.list({
        limit,
        ...(tenant !== undefined ? { tenant } : {}),
        ...(agentId !== undefined ? { agentId } : {}),
        ...(state !== undefined ? { state } : {}),
      }),
    };
  }

  /** One task's executions with their attempts and trace ids, and its tool calls with their state. */
  @Get('tasks/:taskId')
  async task(@Req() req: Request, @Param('taskId') taskId: string): Promise<OpsTaskDetail> {
    this.guard(req);
    const found = await this.deps.records.task(checkedText('taskId', taskId));
    if (!found) throw new NotFoundException({ error: `the ledgers hold no execution of task ${taskId}` });
    return found;
  }

  /** Settles an unknown outcome by hand: `ok`/`error` (it happened, with this text) or `absent` (it never happened). */
  @Post('unknowns/:key/resolve')
  async resolve(@Req() req: Request, @Param('key') key: string, @Body() body: { state?: unknown; text?: unknown }): Promise<OpsResolved> {
    this.guard(req);
    const state = body?.state;
    if (!isUnknownResolution(state)) throw new HttpException({ error: `state must be one of ${UNKNOWN_RESOLUTIONS.join(', ')}` }, 400);
    checkedText('key', key);
    const text =
      typeof body.text === 'string'
        ? checkedText('text', body.text, { allowLineBreaks: true, max: 8192 })
        : `resolved by an operator as ${state}`;
    const done = await this.deps.ledger.resolve(key, state, state === 'absent' ? undefined : { text });
    if (!done) throw new NotFoundException({ error: `no unknown outcome with key ${key}` });
    await this.deps.sampler.unknowns();
    return { key, state };
  }
}

/** Who may call `/ops/*`, and the worker process it reports as. */
export interface OpsSettings {
  workerId: string;
  /** See {@link OpsDeps.token}. */
  token?: string;
}

/** `/ops/*` over the running workers (the global RuntimeModule provides them). */
@Module({})
export class OpsModule {
  static forRoot(settings: OpsSettings): DynamicModule {
    return {
      module: OpsModule,
      controllers: [OpsController],
      providers: [
        {
          provide: OPS_DEPS,
          useFactory: (runtime: AgentsRuntime): OpsDeps => ({
            ...settings,
            sampler: runtime.sampler,
            ledger: runtime.effects,
            records: runtime.records,
            workers: () => runtime.workers,
          }),
          inject: [AgentsRuntime],
        },
      ],
    };
  }
}
