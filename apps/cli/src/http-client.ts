import { CliError, ExitCode, type Credential } from './cli-error.js';

/** JSON over HTTP to one of the platform's services, with errors an operator can act on. */
export async function requestJson<T>(
  service: string,
  baseUrl: string,
  path: string,
  init: { method?: string; body?: unknown; token?: string; credential?: Credential } = {},
): Promise<T> {
  const url = `${baseUrl.replace(/\/$/, '')}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers: {
        accept: 'application/json',
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(`cannot reach the ${service} at ${baseUrl}: ${cause?.code ?? cause?.message ?? String(err)}`, ExitCode.unreachable);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  if (!res.ok)
    throw new CliError(
      `${service} answered ${res.status} to ${init.method ?? 'GET'} ${path}: ${errorText(body)}`,
      ExitCode.failed,
      res.status === 404 ? 'not_found' : undefined,
      res.status === 401 ? init.credential : undefined,
    );
  return body as T;
}

function errorText(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 500) || '(empty)';
  const b = body as { message?: unknown; error?: unknown; detail?: unknown } | undefined;
  const e = b?.error ?? b?.message ?? b?.detail;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
  return JSON.stringify(body ?? null).slice(0, 500);
}
