import type { Command } from 'commander';
// Types only: `mesh --help` must not load @mesh/contract (zod).
import type { OpsWorkers } from '@mesh/contract';
import { CliError } from '../cli-error.js';
import { kafkaOps, type CliContext } from './cli.context.js';

/** `mesh workers`: the worker processes (id, host, Kafka principal, agents), worker groups, partition assignment, lag and heartbeats. */
export function registerWorkersCommand(
  program: Command,
  { kafka, directory, ops, print, directoryAgentIds, describeFailure }: CliContext,
): void {
  program
    .command('workers [agents...]')
    .description(
      'worker processes by id, host and Kafka principal with their agents, worker-group members, partition assignment, lag per partition and last heartbeat (all agents in the directory when none is named)',
    )
    .option('--in-flight', 'also turns in flight per agent, from the agents runtime at --agents-url (that one replica)')
    .action(async (ids: string[], o: { inFlight?: boolean }) => {
      const agentIds = ids.length ? ids : await directoryAgentIds();
      const kafkaOpsModule = await kafkaOps();
      const rows = await kafkaOpsModule.agentWorkers(kafka(), agentIds);
      // Each live process, named as its heartbeats name it: the group members show only client ids.
      const workers = await kafkaOpsModule.workerProcesses(kafka(), agentIds);
      // The heartbeat and in-flight views come from HTTP services: one that fails is reported, the broker's view still shown.
      const problems: string[] = [];
      const heartbeats = await Promise.all(
        agentIds.map((id) =>
          directory<{ lastHeartbeatAt?: string | null }>(`/v1/agents/${encodeURIComponent(id)}`).then(
            (a) => a.lastHeartbeatAt ?? null,
            (err: unknown) => {
              // Not in the directory (or not visible to this token): no heartbeat to show.
              if (!(err instanceof CliError && err.code === 'not_found')) problems.push(describeFailure(err));
              return null;
            },
          ),
        ),
      );
      let inFlight: Map<string, number> | undefined;
      if (o.inFlight) {
        const w = await ops<OpsWorkers>('/workers').catch((err: unknown) => {
          problems.push(describeFailure(err));
          return undefined;
        });
        if (w) inFlight = new Map(w.agents.map((a) => [a.agentId, a.turnsInFlight]));
      }
      const agentsOut = rows.map((r, i) => ({
        ...r,
        lastHeartbeatAt: heartbeats[i] ?? null,
        ...(inFlight ? { turnsInFlight: inFlight.get(r.agentId) ?? 0 } : {}),
      }));
      print({ workers, agents: agentsOut, ...(problems.length ? { problems } : {}) }, () => [
        ...workers.map(
          (w) =>
            `worker ${w.workerId} on ${w.host ?? '(host not reported)'}  principal ${w.principal ?? '-'}  agents ${w.agents.join(',')}  last heartbeat ${w.lastHeartbeatAt}`,
        ),
        ...agentsOut.flatMap((r) => [
          [
            `${r.agentId}  ${r.state}  ${r.members.length} member(s)  lag ${r.lag}`,
            ...(r.turnsInFlight !== undefined ? [`in flight ${r.turnsInFlight}`] : []),
            `last heartbeat ${r.lastHeartbeatAt ?? '-'}`,
            ...(r.lagWithoutConsumer ? ['! LAG WITH NO CONSUMER'] : []),
          ].join('  '),
          ...r.members.map((m) => `  member ${m.clientId}@${m.host}  partitions ${m.partitions.join(',') || '-'}  (${m.memberId})`),
          ...r.partitions.map(
            (p) =>
              `  p${p.partition}  lag ${String(p.lag).padStart(6)}  committed ${p.committed ?? '-'}  ${p.memberId ? `read by ${p.memberId}` : 'unassigned'}`,
          ),
        ]),
        ...problems.map((p) => `(${p})`),
      ]);
    });
}
