// The ACLs of a team's principal: its agents' command topics and worker groups, their dead letters,
// and the two topics every worker writes. Everything else stays refused (the broker allows nothing
// without an ACL). All LITERAL: a prefixed pattern would let agent `a` read `a-b`'s commands.
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  createKafka,
  logLevel,
  ResourcePatternTypes,
  type AclEntry,
  type AclFilter,
  type Admin,
} from '@mesh/bus';
import { CliError } from '../cli-error.js';
import type { KafkaAdminTarget } from './kafka-principal.js';

/** One ACL as operators read it: `TOPIC p.mesh.agent.a1.commands READ`. */
export interface TeamAcl {
  resourceType: 'TOPIC' | 'GROUP' | 'CLUSTER';
  resourceName: string;
  operation: 'READ' | 'WRITE' | 'CREATE' | 'DESCRIBE' | 'IDEMPOTENT_WRITE';
}

/** The signed team events topic (the dispatcher creates it). */
export const teamEventsTopic = (prefix: string) => new TopicNames(prefix).teamEvents();

/** Every ACL team principal needs to run `agents` under topic prefix `prefix` (docs/operations.md, "Giving a team credentials"). */
export function teamAcls(prefix: string, agents: string[]): TeamAcl[] {
  const topics = new TopicNames(prefix);
  const groups = new ConsumerGroups(prefix);
  const acls: TeamAcl[] = [];
  const grant = (resourceType: TeamAcl['resourceType'], resourceName: string, ...operations: Array<TeamAcl['operation']>) => {
    for (const operation of operations) acls.push({ resourceType, resourceName, operation });
  };
  for (const agent of agents) {
    grant('TOPIC', topics.commands(agent), 'READ', 'DESCRIBE');
    grant('GROUP', groups.agentWorkers(agent), 'READ', 'DESCRIBE');
    // The bus consumer creates its dead-letter topic on the first dead letter and writes to it.
    grant('TOPIC', topics.deadLetters(topics.commands(agent)), 'CREATE', 'WRITE', 'READ', 'DESCRIBE');
  }
  grant('TOPIC', teamEventsTopic(prefix), 'WRITE', 'DESCRIBE');
  grant('TOPIC', topics.heartbeats(), 'WRITE', 'DESCRIBE');
  return acls;
}

const entry = (principal: string, acl: TeamAcl): AclEntry => ({
  resourceType: AclResourceTypes[acl.resourceType],
  resourceName: acl.resourceName,
  resourcePatternType: ResourcePatternTypes.LITERAL,
  principal,
  host: '*',
  operation: AclOperationTypes[acl.operation],
  permissionType: AclPermissionTypes.ALLOW,
});

/** Every ACL of `principal`, whatever the resource (the filter of describe and delete). */
const everyAclOf = (principal: string): AclFilter => ({
  resourceType: AclResourceTypes.ANY,
  resourcePatternType: ResourcePatternTypes.ANY,
  principal,
  host: '*',
  operation: AclOperationTypes.ANY,
  permissionType: AclPermissionTypes.ANY,
});

const nameOf = <T extends Record<string, string | number>>(e: T, v: number) =>
  (Object.entries(e).find(([, n]) => n === v)?.[0] ?? String(v)) as string;

export async function withKafkaAdmin<T>(t: KafkaAdminTarget, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = createKafka(
    { brokers: t.brokers, clientId: 'mesh-cli-teams', ...(t.sasl ? { sasl: t.sasl } : {}), ...(t.ssl ? { ssl: true } : {}) },
    { retry: { retries: 1 }, logLevel: logLevel.NOTHING },
  ).admin();
  try {
    await admin.connect();
    return await fn(admin);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`Kafka at ${t.brokers.join(',')}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The ACLs `principal` holds now, as {@link TeamAcl}s (sorted). */
export async function describeTeamAcls(
  admin: Admin,
  principal: string,
): Promise<Array<TeamAcl & { pattern: string; permission: string; host: string }>> {
  const res = await admin.describeAcls(everyAclOf(principal));
  return res.resources
    .flatMap((r) =>
      r.acls
        .filter((a) => a.principal === principal)
        .map((a) => ({
          resourceType: nameOf(AclResourceTypes, r.resourceType) as TeamAcl['resourceType'],
          resourceName: r.resourceName,
          operation: nameOf(AclOperationTypes, a.operation) as TeamAcl['operation'],
          pattern: nameOf(ResourcePatternTypes, r.resourcePatternType),
          permission: nameOf(AclPermissionTypes, a.permissionType),
          host: a.host,
        })),
    )
    .sort((a, b) =>
      `${a.resourceType} ${a.resourceName} ${a.operation}`.localeCompare(`${b.resourceType} ${b.resourceName} ${b.operation}`),
    );
}

const key = (a: TeamAcl) => `${a.resourceType} ${a.resourceName} ${a.operation}`;

/** Creates `acls` for `principal` and checks the broker now lists each of them. */
export async function createTeamAcls(admin: Admin, principal: string, acls: TeamAcl[]): Promise<void> {
  await admin.createAcls({ acl: acls.map((a) => entry(principal, a)) });
  const held = new Set(
    (await describeTeamAcls(admin, principal)).filter((a) => a.pattern === 'LITERAL' && a.permission === 'ALLOW').map(key),
  );
  const missing = acls.filter((a) => !held.has(key(a)));
  if (missing.length > 0)
    throw new CliError(
      `the broker does not list ${missing.length} of the ACLs just created for ${principal}: ${missing.map(key).join(', ')}`,
    );
}

/** Deletes every ACL of `principal`; returns how many there were. */
export async function deleteTeamAcls(admin: Admin, principal: string): Promise<number> {
  const res = await admin.deleteAcls({ filters: [everyAclOf(principal)] });
  const failed = res.filterResponses.find((f) => f.errorCode !== 0);
  if (failed) throw new CliError(`Kafka refused to delete the ACLs of ${principal}: ${failed.errorMessage ?? `error ${failed.errorCode}`}`);
  return res.filterResponses.reduce((n, f) => n + f.matchingAcls.length, 0);
}

/** Every principal the broker holds an ACL for. */
export async function aclPrincipals(admin: Admin): Promise<Set<string>> {
  const res = await admin.describeAcls({
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  return new Set(res.resources.flatMap((r) => r.acls.map((a) => a.principal)));
}
