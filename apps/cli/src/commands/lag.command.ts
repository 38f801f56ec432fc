import type { Command } from 'commander';
// Types only: `mesh --help` must not load @mesh/contract (zod).
import type { OpsWorkers } from '@mesh/contract';
import { kafkaOps, type CliContext } from './cli.context.js';

/** `mesh lag`: consumer lag of agents, from the broker. */
export function registerLagCommand(program: Command, { kafka, ops, print, directoryAgentIds }: CliContext): void {
  program
    .command('lag [agents...]')
    .description('consumer lag of agents (all agents in the directory when none is named), from the broker')
    .option('--by-tenant', 'also show turns in flight per tenant (from the agents runtime)')
    .action(async (ids: string[], o: { byTenant?: boolean }) => {
      const agentIds = ids.length ? ids : await directoryAgentIds();
      const rows = await (await kafkaOps()).agentLag(kafka(), agentIds);
      const tenants = o.byTenant ? (await ops<OpsWorkers>('/workers')).agents : undefined;
      print({ agents: rows, ...(tenants ? { inFlightByTenant: tenants } : {}) }, () => [
        ...rows.map(
          (r) =>
            `${r.agentId.padEnd(28)} lag ${String(r.lag).padStart(7)}   ${r.partitions.map((p) => `p${p.partition}:${p.lag}`).join(' ')}`,
        ),
        ...(tenants ?? []).map((t) => `${t.agentId.padEnd(28)} in flight by tenant: ${JSON.stringify(t.inFlightByTenant)}`),
      ]);
    });
}
