import { timingSafeEqual } from 'node:crypto';
import { Controller, Delete, Get, HttpCode, HttpException, Inject, Param, Put, Req } from '@nestjs/common';
import type { Request } from 'express';
import { bearerToken } from '@mesh/contract';
import { TEAM_NAME, teamBindingBody, viewOf, type TeamView } from './team-binding.js';
import { TeamConflict, TeamRegistry } from './team-registry.js';
import { TeamBindings } from './team-bindings.js';

/** What the controller is built from; `token` is DISPATCHER_OPS_TOKEN. */
export interface TeamsDeps {
  registry: TeamRegistry;
  bindings: TeamBindings;
  token: string | undefined;
}
export const TEAMS_DEPS = Symbol('dispatcher.teams-deps');

const sameSecret = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * Refuses (HttpException `{ error }`) a request without exactly one `Authorization: Bearer` with the
 * ops token: 401; with no token configured, 503 naming the setting (the endpoints are off, never open).
 */
export function checkTeamsCredential(req: Request, token: string | undefined): void {
  if (!token)
    throw new HttpException({ error: 'team bindings are disabled: set DISPATCHER_OPS_TOKEN on the dispatcher to enable /ops/teams' }, 503);
  let credentials = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'authorization') credentials += 1;
  if (credentials > 1) throw new HttpException({ error: 'send exactly one Authorization header' }, 401);
  const presented = bearerToken(req.header('authorization'));
  if (!presented || !sameSecret(presented, token))
    throw new HttpException({ error: 'ops token required: Authorization: Bearer <DISPATCHER_OPS_TOKEN>' }, 401);
}

function checkedName(name: string): string {
  if (!TEAM_NAME.test(name)) throw new HttpException({ error: `team name must be a lower-case slug (${TEAM_NAME.source})` }, 400);
  return name;
}

/**
 * Team bindings (docs/dispatcher.md, "Team bindings"): `PUT /ops/teams/:name` binds a team's
 * agents, event keys and tool audiences; `GET /ops/teams` lists them; `DELETE /ops/teams/:name`
 * revokes one. Each change is read into this replica's bindings at once (the others within a
 * second for a new key, within DISPATCHER_TEAMS_REFRESH_MS for a revocation).
 */
@Controller('ops/teams')
export class TeamsController {
  constructor(@Inject(TEAMS_DEPS) private readonly deps: TeamsDeps) {}

  @Put(':name')
  async put(@Req() req: Request, @Param('name') name: string): Promise<{ team: TeamView }> {
    checkTeamsCredential(req, this.deps.token);
    checkedName(name);
    const body = teamBindingBody.safeParse((req as { body?: unknown }).body);
    if (!body.success) {
      const issues = body.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
      throw new HttpException({ error: `invalid team binding: ${issues}` }, 400);
    }
    try {
      const team = await this.deps.registry.put(name, body.data);
      await this.deps.bindings.refresh();
      return { team: viewOf(team) };
    } catch (err) {
      if (err instanceof TeamConflict) throw new HttpException({ error: err.message }, 409);
      throw err;
    }
  }

  @Get()
  async list(@Req() req: Request): Promise<{ teams: TeamView[] }> {
    checkTeamsCredential(req, this.deps.token);
    return { teams: (await this.deps.registry.list()).map(viewOf) };
  }

  @Delete(':name')
  @HttpCode(204)
  async revoke(@Req() req: Request, @Param('name') name: string): Promise<void> {
    checkTeamsCredential(req, this.deps.token);
    checkedName(name);
    if (!(await this.deps.registry.revoke(name))) throw new HttpException({ error: `no team ${name}` }, 404);
    await this.deps.bindings.refresh();
  }
}
