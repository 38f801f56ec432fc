import { assertTenant, isAgentId } from '@mesh/contract';
import { CliError, ExitCode } from '../cli-error.js';

const TEAM_NAME_RE = /^[a-z0-9][a-z0-9-]{0,40}$/;

/** What a team is called everywhere: its Kafka principal, its database and role, its binding. */
export interface TeamNames {
  name: string;
  /** The SCRAM user. */
  username: string;
  /** The principal as ACLs and the dispatcher's binding name it. */
  principal: string;
  /** Its own Postgres database and the LOGIN role that owns it (`-` is not a bare identifier character). */
  database: string;
  role: string;
}

/** The names of team `name`; a name outside `[a-z0-9][a-z0-9-]{0,40}` is a usage error. */
export function teamNames(name: string): TeamNames {
  if (!TEAM_NAME_RE.test(name))
    throw new CliError(`invalid team name "${name}": expected ${TEAM_NAME_RE.source} (lower-case letters, digits, dashes)`, ExitCode.usage);
  const ident = name.replace(/-/g, '_');
  return { name, username: `team-${name}`, principal: `User:team-${name}`, database: `mesh_team_${ident}`, role: `team_${ident}` };
}

/** The team's agent ids, checked and without repeats; at least one. */
export function checkedAgents(agents: string[]): string[] {
  if (agents.length === 0) throw new CliError('a team runs at least one agent: pass --agent <id>', ExitCode.usage);
  for (const a of agents) if (!isAgentId(a)) throw new CliError(`invalid agent id "${a}": expected a lower-case slug`, ExitCode.usage);
  return [...new Set(agents)];
}

export function checkedTenant(tenant: string): string {
  try {
    return assertTenant(tenant);
  } catch {
    throw new CliError(`invalid tenant "${tenant}": expected a lower-case slug`, ExitCode.usage);
  }
}

/** Tool audiences are resource names the token service issues tokens for (the tools' audiences). */
export function checkedAudiences(audiences: string[]): string[] {
  for (const a of audiences)
    if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,200}$/.test(a)) throw new CliError(`invalid tool audience "${a}"`, ExitCode.usage);
  return [...new Set(audiences)];
}
