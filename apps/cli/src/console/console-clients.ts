import type { Client } from '@a2a-js/sdk/client';
import { BusAdmin, createKafka, type Kafka } from '@mesh/bus';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { createLogger, type Logger } from '@mesh/telemetry';
import { agentClient } from '../a2a-client.js';
import { requestJson } from '../http-client.js';
import { CliError, ExitCode } from '../cli-error.js';
import { listBindings, type TeamBinding } from '../teams/team-binding.js';
import { consoleKafkaLog } from './console-log.js';

/** Where the console reads from: the same services and credentials as the CLI. */
export interface ConsoleTargets {
  directoryUrl: string;
  dispatcherUrl: string;
  agentsUrl: string;
  token?: string;
  /** The agents runtime's ops token: the tenant filter, the ledgers' task view and every action need it. */
  opsToken?: string;
  brokers: string[];
  prefix: string;
  /** The Kafka principal (the CLI's: from the local env file or the environment). */
  sasl?: { mechanism: 'scram-sha-512' | 'scram-sha-256' | 'plain'; username: string; password: string };
  ssl?: boolean;
  /**
   * The dispatcher's DISPATCHER_START_TIMEOUT_MS: a task still `submitted` this long after its
   * turn was accepted is past its start-by time (0: no such warning).
   */
  startTimeoutMs?: number;
  /** Where the console logs (kafkajs at WARN, once per cause); stderr by default. */
  logger?: Logger;
}

/** An agent as the directory lists it. */
export interface DirectoryAgent {
  id: string;
  tenant?: string;
  healthy: boolean;
  retired: boolean;
  lastHeartbeatAt?: string | null;
  card: { name?: string };
}

/** The clients the console holds between requests: one Kafka client and admin, one A2A client per agent. */
export class ConsoleClients {
  readonly kafka: Kafka;
  readonly admin: BusAdmin;
  readonly topics: TopicNames;
  readonly groups: ConsumerGroups;
  readonly logger: Logger;
  private readonly a2a = new Map<string, Promise<Client>>();

  constructor(readonly targets: ConsoleTargets) {
    this.logger = targets.logger ?? createLogger('mesh-console', process.env.LOG_LEVEL ?? 'info', process.stderr);
    this.kafka = createKafka(
      {
        brokers: targets.brokers,
        clientId: 'mesh-console',
        ...(targets.sasl ? { sasl: targets.sasl } : {}),
        ...(targets.ssl ? { ssl: true } : {}),
      },
      { retry: { retries: 1 }, connectionTimeout: 3000, logCreator: consoleKafkaLog(this.logger) as never },
    );
    this.admin = new BusAdmin(this.kafka);
    this.topics = new TopicNames(targets.prefix);
    this.groups = new ConsumerGroups(targets.prefix);
  }

  async close(): Promise<void> {
    await this.admin.close().catch(() => undefined);
  }

  /** Whether an ops token is configured (the ledgers' views, the tenant filter and actions). */
  get ops(): boolean {
    return Boolean(this.targets.opsToken);
  }

  client(agent: string): Promise<Client> {
    let c = this.a2a.get(agent);
    if (!c) {
      c = agentClient(this.targets.dispatcherUrl, agent, this.targets.token);
      c.catch(() => this.a2a.delete(agent));
      this.a2a.set(agent, c);
    }
    return c;
  }

  directory<T>(path: string): Promise<T> {
    return requestJson<T>('directory', this.targets.directoryUrl, path, this.targets.token ? { token: this.targets.token } : {});
  }

  async agents(): Promise<DirectoryAgent[]> {
    return (await this.directory<{ items: DirectoryAgent[] }>('/v1/agents?limit=100')).items;
  }

  /** An agents runtime `/ops` endpoint with the console's ops token. */
  opsRequest<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
    return requestJson<T>('agents runtime', this.targets.agentsUrl, `/ops${path}`, {
      ...init,
      ...(this.targets.opsToken ? { token: this.targets.opsToken } : {}),
    });
  }

  /** The dispatcher's team bindings (`GET /ops/teams`): under npm start it takes the same ops token as the agents' /ops. */
  teams(): Promise<TeamBinding[]> {
    return listBindings({ url: this.targets.dispatcherUrl, ...(this.targets.opsToken ? { token: this.targets.opsToken } : {}) });
  }

  /** The dispatcher's Prometheus text (`GET /metrics`, no token). */
  async dispatcherMetrics(): Promise<string> {
    const url = `${this.targets.dispatcherUrl.replace(/\/$/, '')}/metrics`;
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'text/plain' }, signal: AbortSignal.timeout(5000) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      throw new CliError(
        `cannot reach the dispatcher at ${this.targets.dispatcherUrl}: ${cause?.code ?? messageOf(err)}`,
        ExitCode.unreachable,
      );
    }
    const text = await res.text();
    if (!res.ok) throw new CliError(`dispatcher answered ${res.status} to GET /metrics`, ExitCode.failed);
    return text;
  }

  commandTopic(agent: string): string {
    return this.topics.commands(agent);
  }

  deadLetterTopic(agent: string): string {
    return this.topics.deadLetters(this.topics.commands(agent));
  }
}

/** An error's message, for the page. */
export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
