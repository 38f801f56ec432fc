import { readFileSync } from 'node:fs';
import { parseRemoteAgentSpecs, remoteAgent, type RemoteAgentSpec } from '@mesh/agent-runtime';
import { MeshError } from '@mesh/contract';
import type { AgentDefinition } from '@mesh/agent-sdk';

/**
 * The remote agents a bridge serves: BRIDGE_REMOTE_AGENTS (a JSON array of specs) or
 * BRIDGE_REMOTE_AGENTS_FILE (a file holding one), never both.
 */
export function remoteAgentSpecs(env: NodeJS.ProcessEnv): RemoteAgentSpec[] {
  const inline = env.BRIDGE_REMOTE_AGENTS;
  const file = env.BRIDGE_REMOTE_AGENTS_FILE;
  if (inline && file) throw new MeshError('CONFIG_INVALID', 'set BRIDGE_REMOTE_AGENTS or BRIDGE_REMOTE_AGENTS_FILE, not both');
  let text: string;
  let source: string;
  if (inline) [text, source] = [inline, 'BRIDGE_REMOTE_AGENTS'];
  else if (file) {
    source = `BRIDGE_REMOTE_AGENTS_FILE (${file})`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new MeshError('CONFIG_INVALID', `${source}: ${(err as Error).message}`);
    }
  } else throw new MeshError('CONFIG_INVALID', 'BRIDGE_REMOTE_AGENTS (or BRIDGE_REMOTE_AGENTS_FILE) is not set: no remote agent to serve');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new MeshError('CONFIG_INVALID', `${source}: not JSON: ${(err as Error).message}`);
  }
  try {
    const specs = parseRemoteAgentSpecs(raw);
    if (specs.length === 0) throw new MeshError('CONFIG_INVALID', 'remote agents: the array is empty');
    return specs;
  } catch (err) {
    throw new MeshError('CONFIG_INVALID', `${source}: ${(err as Error).message}`);
  }
}

/** Definitions of the configured remote agents (each fetches its card). */
export async function remoteAgents(env: NodeJS.ProcessEnv): Promise<AgentDefinition[]> {
  return Promise.all(remoteAgentSpecs(env).map((spec) => remoteAgent(spec, { env })));
}
