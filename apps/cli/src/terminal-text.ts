/**
 * Text from services (an agent's artifacts and status messages, error messages) as it is safe to
 * write to a terminal: control characters are shown as escapes instead of acting. A raw ESC could
 * recolour, move the cursor or rewrite earlier lines (`\r`, CSI sequences), set the window title or
 * plant a link (OSC); bidi overrides could make a line read differently from what it says.
 * `--json` output is left exact (JSON.stringify escapes C0 itself).
 */
// C0 controls, DEL, C1 controls, line/paragraph separators, bidi embeddings, overrides and isolates.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
