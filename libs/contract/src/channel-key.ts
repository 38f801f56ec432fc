import { MeshError } from './errors.js';

/** Fields a channel-key template may use. */
export interface ChannelKeyFields {
  tenant: string;
  agent_id: string;
  context_id: string;
  task_id: string;
}

const ALLOWED = new Set<keyof ChannelKeyFields>(['tenant', 'agent_id', 'context_id', 'task_id']);
const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * The default partitioning: one conversation (context) of a tenant with an agent shares a key, so
 * a task's turns and a context's tasks keep their order while one tenant's contexts spread over
 * the topic's partitions, and so over the agent's workers (docs/operations.md, "Adding a worker").
 */
export const DEFAULT_CHANNEL_KEY_TEMPLATE = '{tenant}:{agent_id}:{context_id}';

/**
 * The default before contexts were in it: all of one tenant's work for one agent on one partition.
 * Agents registered with it keep it until their owner changes it (a restart does not).
 */
export const TENANT_CHANNEL_KEY_TEMPLATE = '{tenant}:{agent_id}';

/**
 * The channel-key policy (docs/contract.md §4.2): a template over task fields decides the partition.
 * It must contain `{tenant}` so one tenant's key can never collide with another's.
 */
export class ChannelKey {
  private constructor(
    readonly template: string,
    private readonly parts: ReadonlyArray<{ literal: string } | { field: keyof ChannelKeyFields }>,
  ) {}

  /** Parses and validates a template; errors name the problem (unknown placeholder, no tenant). */
  static parse(template: string = DEFAULT_CHANNEL_KEY_TEMPLATE): ChannelKey {
    if (typeof template !== 'string' || template.length === 0 || template.length > 200) {
      throw new MeshError('CHANNEL_KEY_INVALID', 'key template must be a non-empty string of at most 200 characters');
    }
    const parts: Array<{ literal: string } | { field: keyof ChannelKeyFields }> = [];
    let last = 0;
    let hasTenant = false;
    for (const m of template.matchAll(PLACEHOLDER)) {
      const name = m[1] as keyof ChannelKeyFields;
      if (!ALLOWED.has(name)) {
        throw new MeshError(
          'CHANNEL_KEY_INVALID',
          `key template has unknown placeholder {${m[1]}}; allowed: ${[...ALLOWED].map((a) => `{${a}}`).join(', ')}`,
        );
      }
      if (m.index > last) parts.push({ literal: template.slice(last, m.index) });
      parts.push({ field: name });
      hasTenant ||= name === 'tenant';
      last = m.index + m[0].length;
    }
    if (last < template.length) parts.push({ literal: template.slice(last) });
    if (parts.some((p) => 'literal' in p && /[{}]/.test(p.literal))) {
      throw new MeshError('CHANNEL_KEY_INVALID', 'key template has an unbalanced brace');
    }
    if (!hasTenant) {
      throw new MeshError('CHANNEL_KEY_INVALID', 'key template must contain {tenant}');
    }
    return new ChannelKey(template, parts);
  }

  /** The partition key of one message. */
  render(fields: ChannelKeyFields): string {
    return this.parts.map((p) => ('literal' in p ? p.literal : fields[p.field])).join('');
  }
}
