import type { Command } from 'commander';
import { CliError } from '../cli-error.js';
import { requestJson } from '../http-client.js';
import { terminalSafe } from '../terminal-text.js';
import { localEnvPath, readLocalEnv } from '../local-env.js';
import type { KafkaTarget } from '../kafka-ops.js';

// Kafka (kafkajs via @mesh/bus) loads inside the actions that use it: `mesh --help` and the HTTP-only
// commands start without it.
export const kafkaOps = () => import('../kafka-ops.js');

/** Where output goes (tests capture it). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

/** The options of the `mesh` program that every command reads. */
export interface Globals {
  directoryUrl: string;
  dispatcherUrl: string;
  agentsUrl: string;
  token?: string;
  opsToken?: string;
  brokers: string;
  prefix: string;
  json?: boolean;
}

type RequestInit = { method?: string; body?: unknown };

/** What a command group's actions use: the global options, the services they name, and output. */
export interface CliContext {
  io: CliIo;
  /** The global options as parsed (read inside an action, once commander has parsed them). */
  globals(): Globals;
  kafka(): KafkaTarget;
  /** One JSON document under --json, else the human lines (made terminal-safe). */
  print(json: unknown, human: () => string[]): void;
  /** A timestamped line on stderr, so stdout keeps only the result. */
  progress(line: string): void;
  directory<T>(path: string, init?: RequestInit): Promise<T>;
  ops<T>(path: string, init?: RequestInit): Promise<T>;
  /** The ids of the agents the directory shows this token. */
  directoryAgentIds(): Promise<string[]>;
  /** A failure as one line, with the credential hint: for the `problems` of a view that still prints. */
  describeFailure(err: unknown): string;
}

/** The global options `npm start`'s local env file may supply, by the variable it writes them under. */
const LOCAL_DEFAULTS = {
  directoryUrl: 'MESH_DIRECTORY_URL',
  dispatcherUrl: 'MESH_DISPATCHER_URL',
  agentsUrl: 'MESH_AGENTS_URL',
  token: 'MESH_TOKEN',
  opsToken: 'MESH_OPS_TOKEN',
  brokers: 'KAFKA_BROKERS',
  prefix: 'TOPIC_PREFIX',
} as const satisfies Partial<Record<keyof Globals, string>>;

/** The global options with the local env file's values for those neither a flag nor the environment gave. */
export interface ResolvedGlobals extends Globals {
  /** The file the values came from, and which ones (for the credential hint). */
  local?: { path: string; keys: Array<keyof Globals> };
  /** The Kafka principal, from where the brokers came from: the local env file's, else the environment's. */
  kafkaAuth: Pick<KafkaTarget, 'sasl' | 'ssl'>;
}

/** KAFKA_USERNAME / KAFKA_PASSWORD / KAFKA_SASL_MECHANISM / KAFKA_SSL of `vars` as a Kafka target's principal. */
export function kafkaAuthOf(vars: Record<string, string | undefined>): Pick<KafkaTarget, 'sasl' | 'ssl'> {
  const { KAFKA_USERNAME: username, KAFKA_PASSWORD: password } = vars;
  const mechanism = (vars.KAFKA_SASL_MECHANISM || 'scram-sha-512') as NonNullable<KafkaTarget['sasl']>['mechanism'];
  return {
    ...(username && password ? { sasl: { mechanism, username, password } } : {}),
    ...(vars.KAFKA_SSL === 'true' ? { ssl: true } : {}),
  };
}

const resolved = new WeakMap<Command, ResolvedGlobals>();

/**
 * `program`'s global options after parsing; an option left at its default (no flag, no variable)
 * takes the value `npm start` wrote to the local env file (see docs/operations.md), when there is one.
 */
export function globalsOf(program: Command, env: NodeJS.ProcessEnv): ResolvedGlobals {
  const cached = resolved.get(program);
  if (cached) return cached;
  const opts: ResolvedGlobals = { ...program.opts<Globals>(), kafkaAuth: {} };
  const path = localEnvPath(env);
  const file = readLocalEnv(path);
  if (file) {
    const keys: Array<keyof Globals> = [];
    for (const [key, name] of Object.entries(LOCAL_DEFAULTS) as Array<[keyof typeof LOCAL_DEFAULTS, string]>) {
      const source = program.getOptionValueSource(key);
      if ((source === undefined || source === 'default') && file[name] !== undefined) {
        opts[key] = file[name];
        keys.push(key);
      }
    }
    if (keys.length > 0) opts.local = { path, keys };
  }
  // The principal goes with the brokers: npm start's admin for its broker, the environment's for another.
  opts.kafkaAuth = kafkaAuthOf(file && opts.local?.keys.includes('brokers') ? file : env);
  resolved.set(program, opts);
  return opts;
}

/** Where mesh takes a credential from, said when a service refused a request for want of it, or refused the one given. */
export function credentialHint(err: CliError, given: ResolvedGlobals): string {
  const fromFile = (key: keyof Globals) => (given.local?.keys.includes(key) ? ` (from ${given.local.path})` : '');
  if (err.credential === 'token')
    return given.token
      ? ` (the token given${fromFile('token')} was refused: check --token or MESH_TOKEN)`
      : " (no token given: pass --token or set MESH_TOKEN to an API key or JWT; npm start's development keys are demo-acme and demo-globex)";
  if (err.credential === 'opsToken')
    return given.opsToken
      ? ` (the ops token given${fromFile('opsToken')} was refused: check --ops-token or MESH_OPS_TOKEN; npm start writes its own to .mesh/local.env, which mesh reads)`
      : ' (no ops token given: pass --ops-token or set MESH_OPS_TOKEN; npm start writes its own to .mesh/local.env, which mesh reads)';
  return '';
}

/** The context of `program`'s commands; its global options are read when an action calls. */
export function cliContext(program: Command, io: CliIo): CliContext {
  const g = () => globalsOf(program, io.env);
  const directory = <T>(path: string, init: RequestInit = {}) =>
    requestJson<T>('directory', g().directoryUrl, path, { ...init, credential: 'token', ...(g().token ? { token: g().token } : {}) });
  return {
    io,
    globals: g,
    kafka: () => ({
      brokers: g()
        .brokers.split(',')
        .map((b) => b.trim())
        .filter(Boolean),
      prefix: g().prefix,
      ...g().kafkaAuth,
    }),
    print: (json, human) => {
      if (g().json) io.out(JSON.stringify(json, null, 2));
      else for (const l of human()) io.out(terminalSafe(l));
    },
    progress: (line) => io.err(terminalSafe(`${new Date().toISOString().slice(11, 19)}  ${line}`)),
    directory,
    ops: <T>(path: string, init: RequestInit = {}) =>
      requestJson<T>('agents runtime', g().agentsUrl, `/ops${path}`, {
        ...init,
        credential: 'opsToken',
        ...(g().opsToken ? { token: g().opsToken } : {}),
      }),
    directoryAgentIds: async () => (await directory<{ items: Array<{ id: string }> }>('/v1/agents?limit=100')).items.map((a) => a.id),
    describeFailure: (err) =>
      err instanceof CliError ? err.message + credentialHint(err, g()) : err instanceof Error ? err.message : String(err),
  };
}
