import { TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { BusAdmin, createKafka } from '@mesh/bus';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { agentClient, taskSummary } from '../a2a-client.js';
import { requestJson } from '../http-client.js';

/** Where the console reads from: the same services and credentials as the CLI. */
export interface ConsoleTargets {
  directoryUrl: string;
  dispatcherUrl: string;
  agentsUrl: string;
  token?: string;
  opsToken?: string;
  brokers: string[];
  prefix: string;
}

/** Everything the page shows, gathered in one request; a failing source is reported, not fatal. */
export interface Overview {
  at: string;
  agents: Array<{
    id: string;
    name: string;
    healthy: boolean;
    retired: boolean;
    lag: number | null;
    inFlight: number | null;
    deadLetters: number | null;
  }>;
  tasks: Array<{ agent: string; id: string; state: string; message: string; updated: string }>;
  unknowns: Array<{ key: string; tool: string; tenant: string; taskId: string; reason: string | null }>;
  problems: string[];
}

type AgentView = { id: string; healthy: boolean; retired: boolean; card: { name?: string } };
type Workers = { agents: Array<{ agentId: string; turnsInFlight: number }> };
type Unknowns = { unknowns: Overview['unknowns'] };

const msg = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Builds overviews; keeps one Kafka admin and one A2A client per agent between refreshes. */
export class OverviewSource {
  private readonly admin: BusAdmin;
  private readonly clients = new Map<string, Promise<Client>>();
  private readonly topics: TopicNames;
  private readonly groups: ConsumerGroups;

  constructor(private readonly t: ConsoleTargets) {
    const kafka = createKafka({ brokers: t.brokers, clientId: 'mesh-console' }, { retry: { retries: 1 }, connectionTimeout: 3000 });
    this.admin = new BusAdmin(kafka);
    this.topics = new TopicNames(t.prefix);
    this.groups = new ConsumerGroups(t.prefix);
  }

  async close(): Promise<void> {
    await this.admin.close().catch(() => undefined);
  }

  private client(agent: string): Promise<Client> {
    let c = this.clients.get(agent);
    if (!c) {
      c = agentClient(this.t.dispatcherUrl, agent, this.t.token);
      c.catch(() => this.clients.delete(agent));
      this.clients.set(agent, c);
    }
    return c;
  }

  async overview(): Promise<Overview> {
    const problems: string[] = [];
    const soft = async <T>(what: string, p: Promise<T>): Promise<T | undefined> => {
      try {
        return await p;
      } catch (err) {
        problems.push(`${what}: ${msg(err)}`);
        return undefined;
      }
    };
    const auth = this.t.token ? { token: this.t.token } : {};
    const ops = this.t.opsToken ? { token: this.t.opsToken } : {};
    const [dir, workers, unknowns] = await Promise.all([
      soft('directory', requestJson<{ items: AgentView[] }>('directory', this.t.directoryUrl, '/v1/agents?limit=100', auth)),
      soft('agents runtime', requestJson<Workers>('agents runtime', this.t.agentsUrl, '/ops/workers', ops)),
      soft('unknown outcomes', requestJson<Unknowns>('agents runtime', this.t.agentsUrl, '/ops/unknowns', ops)),
    ]);
    const agents: Overview['agents'] = [];
    const tasks: Overview['tasks'] = [];
    await Promise.all(
      (dir?.items ?? []).map(async (a) => {
        const [lag, dlq, listed] = await Promise.all([
          soft(`lag of ${a.id}`, this.admin.consumerLag(this.groups.agentWorkers(a.id), [this.topics.commands(a.id)])),
          soft(`dead letters of ${a.id}`, this.admin.recordCount(this.topics.deadLetters(this.topics.commands(a.id)))),
          a.retired
            ? Promise.resolve(undefined)
            : soft(
                `tasks of ${a.id}`,
                this.client(a.id).then((c) =>
                  c.listTasks({
                    tenant: '',
                    contextId: '',
                    status: TaskState.TASK_STATE_UNSPECIFIED,
                    pageSize: 10,
                    pageToken: '',
                    statusTimestampAfter: undefined,
                  }),
                ),
              ),
        ]);
        agents.push({
          id: a.id,
          name: a.card?.name ?? a.id,
          healthy: a.healthy,
          retired: a.retired,
          lag: lag ? lag.reduce((n, r) => n + r.lag, 0) : null,
          inFlight: workers?.agents.find((w) => w.agentId === a.id)?.turnsInFlight ?? null,
          deadLetters: dlq ?? null,
        });
        for (const t of listed?.tasks ?? []) tasks.push({ agent: a.id, ...row(t) });
      }),
    );
    agents.sort((x, y) => x.id.localeCompare(y.id));
    tasks.sort((x, y) => y.updated.localeCompare(x.updated));
    return { at: new Date().toISOString(), agents, tasks: tasks.slice(0, 50), unknowns: unknowns?.unknowns ?? [], problems };
  }
}

function row(t: Task): { id: string; state: string; message: string; updated: string } {
  const s = taskSummary(t);
  const ts = t.status?.timestamp as unknown;
  const updated = ts instanceof Date ? ts.toISOString() : typeof ts === 'string' ? ts : '';
  return { id: s.id, state: s.state, message: s.message, updated };
}
