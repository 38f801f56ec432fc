import type { Command } from 'commander';
import { CliError, ExitCode } from '../cli-error.js';
import { localEnvPath, readLocalEnv } from '../local-env.js';
import type { CliContext } from './cli.context.js';
import type { TeamsTarget } from '../teams/team-lifecycle.js';

// The teams modules (kafkajs, @platformatic/kafka, pg, jose) load inside the actions.
const lifecycle = () => import('../teams/team-lifecycle.js');

const collect = (v: string, all: string[]) => [...all, v];

/** `mesh teams`: a team's Kafka principal and ACLs, its own database, its event key, its binding at the dispatcher. */
export function registerTeamsCommand(program: Command, { io, globals: g, kafka, print, progress }: CliContext): void {
  const teams = program
    .command('teams')
    .description(
      "teams that run their own workers: a Kafka principal with ACLs for their agents only, their own database, the dispatcher's binding",
    );

  /** A setting from the environment, else `npm start`'s local env file. */
  const setting = (name: string): string | undefined => io.env[name] || readLocalEnv(localEnvPath(io.env))?.[name] || undefined;

  const target = (o: { dispatcher: boolean }): TeamsTarget => {
    const username = setting('KAFKA_USERNAME');
    const password = setting('KAFKA_PASSWORD');
    if (!username || !password)
      throw new CliError(
        'managing teams needs the Kafka admin principal: set KAFKA_USERNAME and KAFKA_PASSWORD (locally `scripts/kafka.sh credentials` prints them)',
        ExitCode.usage,
      );
    const mechanism = (setting('KAFKA_SASL_MECHANISM') ?? 'scram-sha-512') as 'scram-sha-512' | 'scram-sha-256' | 'plain';
    return {
      kafka: { brokers: kafka().brokers, sasl: { mechanism, username, password }, ssl: setting('KAFKA_SSL') === 'true' },
      prefix: kafka().prefix,
      ...(o.dispatcher ? { dispatcher: { url: g().dispatcherUrl, ...(g().opsToken ? { token: g().opsToken } : {}) } } : {}),
      progress,
    };
  };
  const skipped = (o: { dispatcher: boolean }) =>
    o.dispatcher ? [] : ['(--no-dispatcher: the dispatcher was not asked; its binding was not changed)'];

  teams
    .command('create <name>')
    .description("create team <name>'s Kafka principal and ACLs, database, event key and binding, and write its env file")
    .requiredOption('--tenant <tenant>', 'the tenant the team belongs to')
    .requiredOption('--agent <id>', 'an agent the team runs (repeat for more)', collect, [])
    .option('--tool-audience <aud>', 'a tool audience its agents may get tokens for (repeat for more)', collect, [])
    .requiredOption('--out <file>', 'where to write the env file (0600; never overwritten)')
    .option('--database-admin-url <url>', 'Postgres as a role that creates databases and roles (default: DATABASE_URL)')
    .option('--no-dispatcher', 'do not register the binding at the dispatcher (--dispatcher-url, --ops-token)')
    .action(
      async (
        name: string,
        o: { tenant: string; agent: string[]; toolAudience: string[]; out: string; databaseAdminUrl?: string; dispatcher: boolean },
      ) => {
        const databaseAdminUrl = o.databaseAdminUrl ?? setting('DATABASE_URL');
        if (!databaseAdminUrl)
          throw new CliError('no Postgres to create the team database on: pass --database-admin-url or set DATABASE_URL', ExitCode.usage);
        const team = await (
          await lifecycle()
        ).createTeam(target(o), {
          name,
          tenant: o.tenant,
          agents: o.agent,
          toolAudiences: o.toolAudience,
          out: o.out,
          databaseAdminUrl,
          directoryUrl: g().directoryUrl,
        });
        print({ team: { ...team, acls: team.acls.length } }, () => [
          `team ${team.name} (tenant ${team.tenant}) created`,
          `  Kafka principal  ${team.kafkaPrincipal} (SCRAM-SHA-512), ${team.acls.length} ACLs for agents ${team.agents.join(', ')}`,
          `  database         ${team.database} owned by role ${team.databaseRole}`,
          `  event key        ${team.keyId} (Ed25519)`,
          `  tool audiences   ${team.toolAudiences.join(', ') || '-'}`,
          `  binding          ${team.binding === 'registered' ? `registered at ${g().dispatcherUrl}` : 'NOT registered (--no-dispatcher)'}`,
          `  env file         ${team.envFile} (0600: it holds the team's secrets; hand it over privately)`,
        ]);
      },
    );

  teams
    .command('list')
    .description("teams: the dispatcher's bindings (tenant, agents, tool audiences, key ids, created/revoked) and each principal's ACLs")
    .option('--no-dispatcher', 'only what the broker holds (team principals and their ACLs)')
    .action(async (o: { dispatcher: boolean }) => {
      const rows = await (await lifecycle()).listTeams(target(o));
      print({ teams: rows }, () => [
        ...(rows.length === 0 ? ['(no teams)'] : []),
        ...rows.flatMap((t) => [
          `${t.name}  ${t.kafkaPrincipal}  tenant ${t.tenant ?? '-'}  agents ${t.agents.join(',') || '-'}  tool audiences ${t.toolAudiences.join(',') || '-'}`,
          `  keys ${t.keyIds.join(',') || '-'}  created ${t.createdAt ?? '-'}  ${t.revokedAt ? `REVOKED ${t.revokedAt}` : t.createdAt ? 'live' : '(no binding)'}`,
          ...t.acls.map((a) => `  ACL ${a.permission} ${a.operation} ${a.resourceType} ${a.resourceName} (${a.pattern})`),
        ]),
        ...skipped(o),
      ]);
    });

  teams
    .command('revoke <name>')
    .description("delete the team principal's ACLs and SCRAM user and revoke its binding; its database stays")
    .option('--no-dispatcher', 'do not revoke the binding at the dispatcher')
    .action(async (name: string, o: { dispatcher: boolean }) => {
      const r = await (await lifecycle()).revokeTeam(target(o), name);
      print({ revoked: r }, () => [
        `team ${r.name} revoked: ${r.aclsDeleted} ACL(s) of ${r.kafkaPrincipal} deleted, SCRAM user ${r.scramUserDeleted ? 'deleted' : 'was already gone'}, binding ${r.binding === 'revoked' ? 'revoked' : r.binding === 'none' ? 'none at the dispatcher' : 'not changed (--no-dispatcher)'}`,
        `the database ${r.database} and its role stay: drop them when the team's data is no longer needed (DROP DATABASE ${r.database}; DROP ROLE ${r.database.replace(/^mesh_team_/, 'team_')})`,
      ]);
    });
}
