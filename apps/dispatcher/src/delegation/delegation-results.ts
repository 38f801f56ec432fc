import type { ChildOutcome } from '@mesh/contract';

/**
 * Bounds the children's artifacts a resumed turn's message carries to `maxBytes` (their JSON
 * text, counted per child): in step order, a child's artifacts are kept while they fit in what is
 * left, else left out whole and the child marked `truncated` (the agent can GetTask its taskId).
 * Without it, 16 children with large artifacts make one message too large for the command topic
 * and the worker's memory.
 */
export function boundArtifacts(children: readonly ChildOutcome[], maxBytes: number): ChildOutcome[] {
  let left = maxBytes;
  return children.map((c) => {
    if (c.artifacts.length === 0) return c;
    const bytes = Buffer.byteLength(JSON.stringify(c.artifacts), 'utf8');
    if (bytes <= left) {
      left -= bytes;
      return c;
    }
    return { ...c, artifacts: [], truncated: true };
  });
}
