import { eventually } from '../infra.js';
import { freePort, spawnNode, type SpawnedProcess } from '../processes.js';

/** What a remote A2A server process saw (its GET /stats). */
export interface RemoteStats {
  tasksCreated: number;
  messages: Array<{ messageId: string; taskId: string; text: string; metadata: Record<string, unknown> | undefined }>;
  cancels: string[];
  authorization: string[];
  refused: number;
  deduplicated: number;
}

export interface RemoteProcess {
  url: string;
  cardUrl: string;
  proc: SpawnedProcess;
  stats(): Promise<RemoteStats>;
}

/** Starts test/support/remote-agents/remote-a2a-server in a process of its own; resolves once it serves its card. */
export async function startRemoteAgent(env: Record<string, string> = {}): Promise<RemoteProcess> {
  const port = await freePort();
  const proc = spawnNode('test/dist/support/remote-agents/remote-a2a-server.js', { REMOTE_PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  const cardUrl = `${url}/.well-known/agent-card.json`;
  await eventually('the remote agent is up', async () => (await fetch(cardUrl).catch(() => undefined))?.ok, 30000, 100);
  return { url, cardUrl, proc, stats: async () => (await (await fetch(`${url}/stats`)).json()) as RemoteStats };
}
