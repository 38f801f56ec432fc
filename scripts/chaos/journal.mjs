// The remote agent's JSON-lines journals (scripts/chaos-remote-agent.mjs writes them, scripts/chaos.mjs
// checks them): each line one JSON value; a line a SIGKILL cut short is skipped.
import { existsSync, readFileSync } from 'node:fs';

/** The values of a JSON-lines file, oldest first; none when it does not exist. */
export function readJournal(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return []; // a line cut by a SIGKILL
      }
    });
}
