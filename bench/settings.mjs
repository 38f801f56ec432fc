// The environment the benchmarks read, in one place and checked: a setting that does not hold what
// it takes stops the run before anything starts, with its name and what it takes (exit code 2),
// instead of a NaN or a silently different figure in bench/results. Settings are documented in
// docs/benchmarks.md ("Settings").
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, parseEnv } from 'node:util';

const DEFAULT_BROKERS = '127.0.0.1:9092';
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Stops the run: a wrong setting must never turn into a figure. */
function refuse(name, raw, what) {
  console.error(`bench: ${name}=${JSON.stringify(raw)} is not ${what}`);
  process.exit(2);
}

/** The setting's raw value; an empty one counts as unset. */
function raw(name) {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
}

function checkedInteger(name, text, min, max, whole = text) {
  const what = max === undefined ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  if (!/^\d+$/.test(text)) refuse(name, whole, what);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) refuse(name, whole, what);
  return n;
}

/** A whole number: `fallback` when unset. */
export function integer(name, fallback, { min = 1, max } = {}) {
  const v = raw(name);
  return v === undefined ? fallback : checkedInteger(name, v, min, max);
}

/** A comma-separated list of whole numbers (at least one): `fallback` when unset. */
export function integers(name, fallback, { min = 0, max } = {}) {
  const v = raw(name);
  if (v === undefined) return fallback;
  return v.split(',').map((part) => checkedInteger(name, part.trim(), min, max, v));
}

/** A number, fractions allowed: `fallback` when unset. */
export function number(name, fallback, { min = 0 } = {}) {
  const v = raw(name);
  if (v === undefined) return fallback;
  const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (!(n >= min) || !Number.isFinite(n)) refuse(name, v, `a number ≥ ${min}`);
  return n;
}

/** One of `choices`: `fallback` (which may be undefined) when unset. */
export function oneOf(name, fallback, choices) {
  const v = raw(name);
  if (v === undefined) return fallback;
  if (!choices.includes(v)) refuse(name, v, `one of ${choices.join(', ')}`);
  return v;
}

/** Free text (a path, Node flags): `fallback` when unset. */
export function text(name, fallback) {
  return raw(name) ?? fallback;
}

/**
 * A command-line option, `--name=value` or `--name value` (node:util's parseArgs); `undefined` when
 * absent. A name given with no value is refused.
 */
export function option(name) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: false,
    allowPositionals: true,
    options: { [name]: { type: 'string' } },
  });
  const v = values[name];
  if (v === true || (typeof v === 'string' && v.startsWith('--'))) {
    console.error(`bench: --${name} needs a value`);
    process.exit(2);
  }
  return v;
}

/** A whole-number command-line option (see `option`): `fallback` when absent. */
export function integerOption(name, fallback, { min = 1, max } = {}) {
  const v = option(name);
  return v === undefined ? fallback : checkedInteger(`--${name}`, v, min, max);
}

/**
 * KAFKA_BROKERS: the brokers every benchmark and its child processes connect to, `host:port,…`.
 * Their principal: KAFKA_USERNAME / KAFKA_PASSWORD (KAFKA_SASL_MECHANISM), else the admin of the
 * local broker scripts/kafka.sh started (its credentials file), put in the environment so every
 * client and child process of the run uses it; KAFKA_AUTH=none or no credentials file: none.
 */
export function kafkaBrokers() {
  const v = raw('KAFKA_BROKERS') ?? DEFAULT_BROKERS;
  const list = v.split(',').map((b) => b.trim());
  for (const b of list) if (!/^[^\s:/]+:\d{1,5}$/.test(b)) refuse('KAFKA_BROKERS', v, 'a comma-separated list of host:port');
  adoptLocalPrincipal();
  return list;
}

// At load too: a run's env objects spread process.env before they name the brokers.
adoptLocalPrincipal();
function adoptLocalPrincipal() {
  if (raw('KAFKA_USERNAME') || process.env.KAFKA_AUTH === 'none') return;
  const file = join(raw('KAFKA_HOME_DIR') ?? new URL('../.kafka', import.meta.url).pathname, 'credentials.env');
  if (!existsSync(file)) return;
  const password = parseEnv(readFileSync(file, 'utf8')).KAFKA_ADMIN_PASSWORD;
  if (!password) return;
  Object.assign(process.env, { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_USERNAME: 'mesh-admin', KAFKA_PASSWORD: password });
}

/** The broker a figure was measured on, for the result file: where, and whether clients authenticated. */
export function kafkaFacts() {
  const brokers = kafkaBrokers();
  const user = raw('KAFKA_USERNAME') && raw('KAFKA_PASSWORD') ? raw('KAFKA_USERNAME') : undefined;
  const mechanism = (raw('KAFKA_SASL_MECHANISM') ?? 'scram-sha-512').toUpperCase();
  return {
    brokers,
    authentication: user ? `SASL/${mechanism} as ${user}` : 'none',
    ...(process.env.KAFKA_SSL === 'true' ? { tls: true } : {}),
  };
}

/**
 * TEST_DATABASE_ADMIN_URL: the Postgres server (as in `npm test`) on which each run creates a
 * database of its own and drops it at the end; a URL object the caller may point at its database.
 */
export function adminDatabaseUrl() {
  const v = raw('TEST_DATABASE_ADMIN_URL') ?? DEFAULT_ADMIN_URL;
  let url;
  try {
    url = new URL(v);
  } catch {
    refuse('TEST_DATABASE_ADMIN_URL', v, 'a postgres:// URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') refuse('TEST_DATABASE_ADMIN_URL', v, 'a postgres:// URL');
  return url;
}
