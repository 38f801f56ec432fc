import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { CliError, ExitCode } from '../cli-error.js';
import type { CliContext } from './cli.context.js';

type AgentView = {
  id: string;
  tenant: string;
  visibility: string;
  version: number;
  healthy: boolean;
  retired: boolean;
  card: { name?: string };
};

const agentLine = (a: AgentView) =>
  `${a.id.padEnd(28)} ${(a.retired ? 'retired' : a.healthy ? 'healthy' : 'no heartbeat').padEnd(13)} v${a.version}  ${a.visibility.padEnd(8)} ${a.card?.name ?? ''}`;

/** `mesh agents`: the agent directory. */
export function registerAgentsCommand(program: Command, { directory, print }: CliContext): void {
  const agents = program.command('agents').description('the agent directory');
  agents
    .command('list')
    .description('agents visible to you')
    .option('--include-retired', 'also retired agents')
    .option('--healthy', 'only agents with a live heartbeat')
    .action(async (o: { includeRetired?: boolean; healthy?: boolean }) => {
      const q = new URLSearchParams({
        limit: '100',
        ...(o.includeRetired ? { includeRetired: 'true' } : {}),
        ...(o.healthy ? { healthy: 'true' } : {}),
      });
      const page = await directory<{ items: AgentView[] }>(`/v1/agents?${q}`);
      print(page, () => (page.items.length ? page.items.map(agentLine) : ['(no agents)']));
    });
  agents
    .command('search <text...>')
    .description('ranked search over names, descriptions and skills')
    .option('--skill <id>', 'only agents with this skill id')
    .option('--tag <tag>', 'only agents with this skill tag')
    .action(async (text: string[], o: { skill?: string; tag?: string }) => {
      const q = new URLSearchParams({
        q: text.join(' '),
        limit: '20',
        ...(o.skill ? { skill: o.skill } : {}),
        ...(o.tag ? { tag: o.tag } : {}),
      });
      const page = await directory<{ items: Array<AgentView & { rank?: number }> }>(`/v1/agents?${q}`);
      print(page, () => (page.items.length ? page.items.map(agentLine) : ['(no match)']));
    });
  agents
    .command('register <file>')
    .description('register an agent from a JSON file (the directory registration body)')
    .action(async (file: string) => {
      let body: unknown;
      try {
        body = JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`, ExitCode.usage);
      }
      const a = await directory<AgentView>('/v1/agents', { method: 'POST', body });
      print(a, () => [`registered ${a.id} v${a.version}`]);
    });
  agents
    .command('retire <id>')
    .description('retire an agent (its card is no longer served; tasks in flight finish)')
    .action(async (id: string) => {
      const a = await directory<AgentView>(`/v1/agents/${encodeURIComponent(id)}`, { method: 'DELETE' });
      print(a, () => [`retired ${a.id}`]);
    });
}
