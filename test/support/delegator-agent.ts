// A test agent that delegates as its message says, for the delegation specs: a data part
// `{ delegate: [{ agent | skill, text, scopes? }], join?, timeoutMs?, delayMs? }` makes its first turn
// wait `delayMs` (abortable: a window to kill its worker mid-turn), then delegate; the turn after
// reports `task.delegation` as a `delegation` artifact (data) and completes. A text `bulk:<n>` (a
// child's ask) is answered with an artifact of n characters.
import { data, defineAgent, text, type DelegateTo } from '@mesh/agent-sdk';
import { isJsonObject } from '@mesh/contract';

export interface DelegatorAsk {
  delegate: Array<({ agent: string } | { skill: string }) & { text: string; scopes?: string[] }>;
  join?: 'all' | 'first';
  timeoutMs?: number;
  delayMs?: number;
}

export const delegatorAgent = defineAgent({
  id: 'delegator-agent',
  card: {
    name: 'Delegator',
    description: 'Delegates as told (tests).',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [{ id: 'delegate', name: 'Delegate', description: 'Delegates as told', tags: ['test'] }],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
  },
  channel: { visibility: 'tenant', partitions: 2 },
  handler: async (task, ctx) => {
    if (task.delegation) {
      await ctx.artifact({
        name: 'delegation',
        parts: [
          data({ ...task.delegation, children: task.delegation.children.map((c) => ({ ...c, message: c.message ?? null })) } as never),
        ],
      });
      return ctx.complete('delegated work reported');
    }
    const bulk = task.parts.map((p) => (p.type === 'text' ? /^bulk:(\d+)$/.exec(p.text)?.[1] : undefined)).find(Boolean);
    if (bulk) {
      await ctx.artifact({ name: 'bulk', parts: [text('x'.repeat(Number(bulk)))] });
      return ctx.complete('bulk written');
    }
    const ask = task.parts.map((p) => (p.type === 'data' && isJsonObject(p.data) ? p.data : undefined)).find(Boolean) as
      DelegatorAsk | undefined;
    if (!ask) return ctx.reject('send a data part { delegate: [...] }');
    if (ask.delayMs) {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, ask.delayMs);
        task.signal.addEventListener('abort', () => (clearTimeout(t), reject(task.signal.reason)), { once: true });
      });
    }
    const to: DelegateTo[] = ask.delegate.map((d) => ({
      ...('agent' in d ? { agent: d.agent } : { skill: d.skill }),
      parts: [text(d.text)],
      ...(d.scopes ? { scopes: d.scopes } : {}),
    })) as DelegateTo[];
    return ctx.delegate(to, { ...(ask.join ? { join: ask.join } : {}), ...(ask.timeoutMs ? { timeoutMs: ask.timeoutMs } : {}) });
  },
});
