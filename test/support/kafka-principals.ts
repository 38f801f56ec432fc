import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { repoRoot } from './processes.js';

const CLIENT_SETTINGS = ['KAFKA_SASL_MECHANISM', 'KAFKA_USERNAME', 'KAFKA_PASSWORD', 'KAFKA_SSL'] as const;

/**
 * The run's Kafka client settings (scripts/run-tests.mjs fills them with the admin principal of an
 * authenticating broker; none for a broker without authentication), for a process given only its own env.
 */
export function kafkaClientEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(CLIENT_SETTINGS.filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
}

/** Settings that take the run's principal away, so a process reads its own (npm start: its credentials file). */
export const NO_KAFKA_PRINCIPAL: NodeJS.ProcessEnv = Object.fromEntries(CLIENT_SETTINGS.map((k) => [k, undefined]));

/**
 * A platform service's own principal (`mesh-<name>`) from the local broker's credentials file
 * (scripts/kafka.sh); nothing when the run's broker does not authenticate.
 */
export function platformPrincipal(name: 'admin' | 'dispatcher' | 'directory' | 'agents'): NodeJS.ProcessEnv {
  if (!process.env.KAFKA_USERNAME) return {};
  const file = join(process.env.KAFKA_HOME_DIR ?? join(repoRoot, '.kafka'), 'credentials.env');
  if (!existsSync(file)) throw new Error(`the run authenticates to Kafka but ${file} is missing: start the broker with scripts/kafka.sh`);
  const password = parseEnv(readFileSync(file, 'utf8'))[`KAFKA_${name.toUpperCase()}_PASSWORD`];
  if (!password) throw new Error(`${file} has no password for mesh-${name}`);
  return { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_USERNAME: `mesh-${name}`, KAFKA_PASSWORD: password };
}
