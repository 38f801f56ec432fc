// `mesh teams create | list | revoke`: the steps in order, and on a failure midway the undoing of
// what this run created, so a retry starts from nothing.
import { ToolGrants } from '@mesh/contract';
import { CliError, ExitCode } from '../cli-error.js';
import { checkedAgents, checkedAudiences, checkedTenant, teamNames, type TeamNames } from './team-names.js';
import {
  awaitScramLogin,
  deleteScramUser,
  randomPassword,
  scramUserExists,
  upsertScramUser,
  type KafkaAdminTarget,
} from './kafka-principal.js';
import { aclPrincipals, createTeamAcls, deleteTeamAcls, describeTeamAcls, teamAcls, withKafkaAdmin, type TeamAcl } from './team-acls.js';
import { createTeamDatabase, dropTeamDatabase, existingTeamDatabase } from './team-database.js';
import { generateTeamEventKey } from './team-keys.js';
import { assertEnvFileFree, writeEnvFile } from './team-env-file.js';
import { deleteBinding, listBindings, putBinding, type DispatcherTarget, type TeamBinding } from './team-binding.js';

export interface TeamsTarget {
  kafka: KafkaAdminTarget;
  prefix: string;
  /** Undefined: the binding is not registered (--no-dispatcher). */
  dispatcher?: DispatcherTarget;
  progress(line: string): void;
}

export interface CreateTeamRequest {
  name: string;
  tenant: string;
  agents: string[];
  toolAudiences: string[];
  out: string;
  /** The platform's Postgres as a role that may create roles and databases. */
  databaseAdminUrl: string;
  /** What the worker's env file names besides the credentials. */
  directoryUrl: string;
}

/** What `create` made (no secrets). */
export interface CreatedTeam {
  name: string;
  tenant: string;
  agents: string[];
  toolAudiences: string[];
  kafkaPrincipal: string;
  acls: TeamAcl[];
  database: string;
  databaseRole: string;
  keyId: string;
  binding: 'registered' | 'not registered';
  envFile: string;
}

/** Fails when anything of team `names` exists already: the SCRAM user, an ACL, the database or role, a live binding. */
async function assertTeamAbsent(t: TeamsTarget, n: TeamNames, adminUrl: string): Promise<void> {
  const taken: string[] = [];
  if (await scramUserExists(t.kafka, n.username)) taken.push(`the Kafka SCRAM user ${n.username}`);
  const acls = await withKafkaAdmin(t.kafka, (admin) => describeTeamAcls(admin, n.principal));
  if (acls.length > 0) taken.push(`${acls.length} ACL(s) of ${n.principal}`);
  const db = await existingTeamDatabase(adminUrl, n.database, n.role);
  if (db.database) taken.push(`the database ${n.database} (a revoked team's database stays until an operator drops it)`);
  if (db.role) taken.push(`the Postgres role ${n.role}`);
  if (t.dispatcher) {
    const bound = (await listBindings(t.dispatcher)).find((b) => b.name === n.name && !b.revokedAt);
    if (bound) taken.push(`the dispatcher's binding of team ${n.name}`);
  }
  if (taken.length > 0) throw new CliError(`team ${n.name} exists: ${taken.join('; ')} — nothing was created`, ExitCode.failed);
}

export async function createTeam(t: TeamsTarget, req: CreateTeamRequest): Promise<CreatedTeam> {
  const n = teamNames(req.name);
  const tenant = checkedTenant(req.tenant);
  const agents = checkedAgents(req.agents);
  const toolAudiences = checkedAudiences(req.toolAudiences);
  assertEnvFileFree(req.out);
  await assertTeamAbsent(t, n, req.databaseAdminUrl);

  // Each step that created something pushes its undoing; a failure runs them backwards.
  const undo: Array<{ what: string; run: () => Promise<unknown> }> = [];
  try {
    const kafkaPassword = randomPassword();
    t.progress(`creating the SCRAM-SHA-512 user ${n.username} …`);
    undo.push({ what: `the SCRAM user ${n.username}`, run: () => deleteScramUser(t.kafka, n.username) });
    await upsertScramUser(t.kafka, n.username, kafkaPassword);
    await awaitScramLogin(t.kafka, n.username, kafkaPassword);

    const acls = teamAcls(t.prefix, agents);
    t.progress(`granting ${acls.length} ACLs to ${n.principal} …`);
    undo.push({ what: `the ACLs of ${n.principal}`, run: () => withKafkaAdmin(t.kafka, (admin) => deleteTeamAcls(admin, n.principal)) });
    await withKafkaAdmin(t.kafka, (admin) => createTeamAcls(admin, n.principal, acls));

    t.progress(`creating the database ${n.database} owned by ${n.role} …`);
    const dbPassword = randomPassword();
    const databaseUrl = await createTeamDatabase(req.databaseAdminUrl, n.database, n.role, dbPassword);
    undo.push({
      what: `the database ${n.database} and role ${n.role}`,
      run: () => dropTeamDatabase(req.databaseAdminUrl, n.database, n.role),
    });

    const key = await generateTeamEventKey();
    if (t.dispatcher) {
      t.progress(`binding team ${n.name} at the dispatcher …`);
      await putBinding(t.dispatcher, n.name, {
        tenant,
        agents,
        eventKeys: { keys: [key.publicJwk] },
        toolAudiences,
        kafkaPrincipal: n.principal,
      });
      undo.push({ what: `the dispatcher's binding of ${n.name}`, run: () => deleteBinding(t.dispatcher!, n.name) });
    }

    writeEnvFile(
      req.out,
      {
        KAFKA_BROKERS: t.kafka.brokers.join(','),
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_USERNAME: n.username,
        KAFKA_PASSWORD: kafkaPassword,
        ...(t.kafka.ssl ? { KAFKA_SSL: 'true' } : {}),
        TOPIC_PREFIX: t.prefix,
        DATABASE_URL: databaseUrl,
        AGENTS_RUN: agents.join(','),
        AGENTS_EVENT_KEY: JSON.stringify(key.privateJwk),
        AGENTS_DIRECTORY_URL: req.directoryUrl,
        // Tool tokens come only from exchanging a run command's grant at the dispatcher (no shared secret).
        ...(t.dispatcher ? { AGENTS_TOKEN_URL: `${t.dispatcher.url.replace(/\/+$/, '')}${ToolGrants.tokenPath}` } : {}),
      },
      [
        `Team ${n.name} (tenant ${tenant}): the credentials of its worker, written by \`mesh teams create\`. Keep it secret.`,
        'Add AGENTS_DIRECTORY_TOKEN (an API key or JWT of the tenant) and run the worker with these settings:',
        '  set -a; . ./this-file; set +a; node dist/main.js',
      ],
    );
    return {
      name: n.name,
      tenant,
      agents,
      toolAudiences,
      kafkaPrincipal: n.principal,
      acls,
      database: n.database,
      databaseRole: n.role,
      keyId: key.kid,
      binding: t.dispatcher ? 'registered' : 'not registered',
      envFile: req.out,
    };
  } catch (err) {
    const left: string[] = [];
    for (const step of undo.reverse()) {
      try {
        await step.run();
      } catch (undoErr) {
        left.push(`${step.what} (${undoErr instanceof Error ? undoErr.message : String(undoErr)})`);
      }
    }
    const message = err instanceof Error ? err.message : String(err);
    const rolledBack = left.length === 0 ? 'what this run created was removed' : `could NOT remove: ${left.join('; ')}`;
    throw new CliError(
      `creating team ${n.name} failed: ${message} — ${rolledBack}`,
      err instanceof CliError ? err.exitCode : ExitCode.failed,
    );
  }
}

/** A team as `mesh teams list` shows it: the dispatcher's binding (when asked) and the broker's ACLs of its principal. */
export interface ListedTeam {
  name: string;
  kafkaPrincipal: string;
  tenant: string | null;
  agents: string[];
  toolAudiences: string[];
  keyIds: string[];
  createdAt: string | null;
  revokedAt: string | null;
  acls: Array<TeamAcl & { pattern: string; permission: string }>;
}

const TEAM_PRINCIPAL = /^User:team-([a-z0-9][a-z0-9-]{0,40})$/;

/** The teams the dispatcher binds and the team principals (`User:team-*`) the broker has ACLs for. */
export async function listTeams(t: TeamsTarget): Promise<ListedTeam[]> {
  const bindings: TeamBinding[] = t.dispatcher ? await listBindings(t.dispatcher) : [];
  return withKafkaAdmin(t.kafka, async (admin) => {
    const principals = new Map<string, string>(bindings.map((b) => [b.kafkaPrincipal, b.name]));
    for (const principal of await aclPrincipals(admin)) {
      const m = TEAM_PRINCIPAL.exec(principal);
      if (m && !principals.has(principal)) principals.set(principal, m[1]!);
    }
    const out: ListedTeam[] = [];
    for (const [principal, name] of principals) {
      const b = bindings.find((x) => x.kafkaPrincipal === principal);
      out.push({
        name,
        kafkaPrincipal: principal,
        tenant: b?.tenant ?? null,
        agents: b?.agents ?? [],
        toolAudiences: b?.toolAudiences ?? [],
        keyIds: b?.keyIds ?? [],
        createdAt: b?.createdAt ?? null,
        revokedAt: b?.revokedAt ?? null,
        acls: (await describeTeamAcls(admin, principal)).map(({ host: _host, ...a }) => a),
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  });
}

export interface RevokedTeam {
  name: string;
  kafkaPrincipal: string;
  aclsDeleted: number;
  scramUserDeleted: boolean;
  binding: 'revoked' | 'not revoked' | 'none';
  /** Kept for the operator: it holds the team's data. */
  database: string;
}

/** Deletes the principal's ACLs and SCRAM user and revokes the binding; the database stays. */
export async function revokeTeam(t: TeamsTarget, name: string): Promise<RevokedTeam> {
  const n = teamNames(name);
  t.progress(`deleting the ACLs of ${n.principal} …`);
  const aclsDeleted = await withKafkaAdmin(t.kafka, (admin) => deleteTeamAcls(admin, n.principal));
  t.progress(`deleting the SCRAM user ${n.username} …`);
  const scramUserDeleted = await deleteScramUser(t.kafka, n.username);
  let binding: RevokedTeam['binding'] = 'not revoked';
  if (t.dispatcher) {
    try {
      await deleteBinding(t.dispatcher, n.name);
      binding = 'revoked';
    } catch (err) {
      if (!(err instanceof CliError && err.code === 'not_found')) throw err;
      binding = 'none';
    }
  }
  if (aclsDeleted === 0 && !scramUserDeleted && binding !== 'revoked')
    throw new CliError(
      `no team ${n.name}: no ACLs of ${n.principal}, no SCRAM user ${n.username}${t.dispatcher ? ', no binding' : ''}`,
      ExitCode.failed,
      'not_found',
    );
  return { name: n.name, kafkaPrincipal: n.principal, aclsDeleted, scramUserDeleted, binding, database: n.database };
}
