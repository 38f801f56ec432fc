import { replayDeadLetters } from '@mesh/bus';
import { isUnknownResolution, UNKNOWN_RESOLUTIONS, type OpsResolved, type OpsWorkers } from '@mesh/contract';
import { CliError, ExitCode } from '../cli-error.js';
import {
  describeWorkers,
  readMarkedDeadLetters,
  readWorkerProcesses,
  type AgentWorkers,
  type ListedDeadLetter,
  type WorkerProcess,
} from '../kafka-ops.js';
import { messageOf, type ConsoleClients } from './console-clients.js';

/**
 * The workers page: the worker processes alive (id, host, Kafka principal, agents, from their heartbeats), and per
 * agent its group's members and partition assignment, in-flight turns and last heartbeat.
 */
export async function workersView(c: ConsoleClients): Promise<{
  workers: WorkerProcess[];
  agents: Array<AgentWorkers & { lastHeartbeatAt: string | null; turnsInFlight: number | null }>;
  missing: string[];
  problems: string[];
}> {
  const problems: string[] = [];
  const [agents, inFlight] = await Promise.all([
    c.agents(),
    c.ops
      ? c.opsRequest<OpsWorkers>('/workers').catch((err: unknown) => {
          problems.push(`agents runtime: ${messageOf(err)}`);
          return undefined;
        })
      : Promise.resolve(undefined),
  ]);
  const out = [];
  const missing: string[] = [];
  for (const a of agents) {
    const w = await describeWorkers(c.admin, c.targets.prefix, a.id);
    // No command topic yet: nothing was ever sent to the agent, there is no group to show.
    if (!w) {
      missing.push(a.id);
      continue;
    }
    out.push({
      ...w,
      lastHeartbeatAt: a.lastHeartbeatAt ?? null,
      turnsInFlight: inFlight?.agents.find((x) => x.agentId === a.id)?.turnsInFlight ?? null,
    });
  }
  const workers = await readWorkerProcesses(
    c.kafka,
    c.targets.prefix,
    agents.map((a) => a.id),
  ).catch((err: unknown) => {
    problems.push(`heartbeats: ${messageOf(err)}`);
    return [];
  });
  return { workers, agents: out, missing, problems };
}

/** One agent's dead-letter topic as the browser shows it. */
export interface DeadLetterTopicView {
  agent: string;
  topic: string;
  /** False until something was dead-lettered from the agent's command topic. */
  exists: boolean;
  records: ListedDeadLetter[];
}

/** The dead-letter browser: each directory agent's `{commands}.dlq`, read from the start, replayed records marked. */
export async function deadLetterView(c: ConsoleClients, limit = 100): Promise<{ topics: DeadLetterTopicView[] }> {
  const topics: DeadLetterTopicView[] = [];
  for (const a of await c.agents()) {
    const topic = c.deadLetterTopic(a.id);
    // Checked first: reading a topic that does not exist makes kafkajs retry and log for nothing.
    const records = (await c.admin.topicExists(topic)) ? await readMarkedDeadLetters(c.kafka, c.admin, topic, limit) : undefined;
    topics.push({ agent: a.id, topic, exists: records !== undefined, records: records ?? [] });
  }
  return { topics };
}

/** Sends an agent's dead letters not replayed before back to their source topics; returns how many. */
export async function replayAgentDeadLetters(c: ConsoleClients, agent: string): Promise<{ topic: string; replayed: number }> {
  const topic = c.deadLetterTopic(agent);
  if (!(await c.admin.topicExists(topic))) throw new CliError(`no dead-letter topic ${topic}`, ExitCode.failed, 'not_found');
  return { topic, replayed: await replayDeadLetters(c.kafka, topic, { timeoutMs: 30_000 }) };
}

/** Cancels a task through the dispatcher (A2A CancelTask, with the console's caller token). */
export async function cancelTask(c: ConsoleClients, agent: string, id: string): Promise<{ id: string; state: string }> {
  const { stateName } = await import('../a2a-client.js');
  const client = await c.client(agent);
  try {
    const t = await client.cancelTask({ tenant: '', id, metadata: undefined });
    return { id: t.id, state: stateName(t.status?.state) };
  } catch (err) {
    throw new CliError(`cancel ${id}: ${messageOf(err)}`, ExitCode.failed, /not found/i.test(messageOf(err)) ? 'not_found' : 'failed');
  }
}

/** Settles an unknown outcome through the agents runtime's ops endpoint. */
export async function resolveUnknown(c: ConsoleClients, key: string, body: { state?: unknown; text?: unknown }): Promise<OpsResolved> {
  const state = body.state;
  if (!isUnknownResolution(state)) throw new CliError(`state must be one of ${UNKNOWN_RESOLUTIONS.join(', ')}`, ExitCode.usage);
  if (body.text !== undefined && typeof body.text !== 'string') throw new CliError('text must be a string', ExitCode.usage);
  return c.opsRequest<OpsResolved>(`/unknowns/${encodeURIComponent(key)}/resolve`, {
    method: 'POST',
    body: { state, ...(body.text ? { text: body.text } : {}) },
  });
}
