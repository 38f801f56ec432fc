import type { ChildOutcome } from '@mesh/contract';

/**
 * Bounds what a resumed turn's message carries of its children to `maxBytes` (the JSON text of
 * each child's artifacts and of its last status message): in step order, a child's artifacts, then
 * its message, are kept while they fit in what is left, else left out whole and the child marked
 * `truncated` (the agent can GetTask its taskId). Without it, 16 children with large artifacts or
 * messages make one message too large for the command topic and the worker's memory.
 */
export function boundChildResults(children: readonly ChildOutcome[], maxBytes: number): ChildOutcome[] {
  let left = maxBytes;
  const fits = (value: unknown) => {
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    if (bytes > left) return false;
    left -= bytes;
    return true;
  };
  return children.map((c) => {
    let out = c;
    if (c.artifacts.length > 0 && !fits(c.artifacts)) out = { ...out, artifacts: [], truncated: true };
    if (c.message !== undefined && !fits(c.message)) {
      const { message: _left, ...rest } = out;
      out = { ...rest, truncated: true };
    }
    return out;
  });
}
