import { data, defineAgent, text, textOf, type DelegateTo, type DelegationOutcome } from '@mesh/agent-sdk';
import { MAX_DELEGATION_CHILDREN, type JsonValue } from '@mesh/contract';
import { INVOICE_RE } from './billing.js';

/** What a support message asks about one invoice. */
export interface SupportAsk {
  invoiceId: string;
  kind: 'refund' | 'question';
}

const REFUND_WORDS = /\b(charged twice|double[- ]charged|duplicate|refund|twice)\b/i;

/**
 * The asks of a support message: each invoice number with the clause around it; a clause that
 * speaks of a double charge or a refund asks for a refund, any other a look-up. One ask per invoice.
 */
export function supportAsks(message: string): SupportAsk[] {
  const asks = new Map<string, SupportAsk>();
  for (const clause of message.split(/[.;!?\n]|,\s*(?:and|but)\b|\band\b/i)) {
    const ids = clause.match(new RegExp(INVOICE_RE.source, 'gi')) ?? [];
    for (const raw of ids) {
      const invoiceId = raw.toUpperCase();
      const kind = REFUND_WORDS.test(clause) ? 'refund' : 'question';
      // A refund ask wins over a question about the same invoice.
      if (!asks.has(invoiceId) || kind === 'refund') asks.set(invoiceId, { invoiceId, kind });
    }
  }
  return [...asks.values()];
}

/** The first data part of a child's first artifact: what the answer reports. */
function resultOf(artifacts: DelegationOutcome['children'][number]['artifacts']): JsonValue | null {
  for (const a of artifacts) for (const p of a.parts) if (p.type === 'data') return p.data;
  return null;
}

/**
 * Reads a support message and hands each ask to the agent for it, in parallel, through the mesh:
 * a duplicate charge to `refund-agent` (by id), an invoice question to whichever agent has the
 * `invoice-lookup` skill (`invoice-agent`). It holds no worker while they run; its next turn
 * answers with both results (artifact `triage`).
 */
export const triageAgent = defineAgent({
  id: 'triage-agent',
  card: {
    name: 'Triage Agent',
    description: 'Reads a support message and routes each request about an invoice to the agent for it, then answers with the results.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [
      {
        id: 'support-triage',
        name: 'Triage a support message',
        description: 'Refunds duplicate charges and answers invoice questions by delegating to the billing agents',
        tags: ['support', 'billing'],
      },
    ],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
  },
  channel: { visibility: 'public', maxInFlight: 64 },
  handler: async (task, ctx) => {
    if (task.delegation) {
      const answers = task.delegation.children.map((c) => ({
        step: c.step,
        agent: c.agent ?? null,
        task_id: c.taskId,
        state: c.state,
        result: resultOf(c.artifacts),
        message: c.message ? textOf(c.message.parts) : null,
      }));
      await ctx.artifact({ name: 'triage', parts: [data({ answers, unfinished: task.delegation.unfinished })] });
      const lines = answers.map((a) => `${a.agent ?? `step ${a.step}`}: ${a.state}${a.message ? ` — ${a.message}` : ''}`);
      const allDone = answers.every((a) => a.state === 'completed');
      return allDone
        ? ctx.complete(`Done. ${lines.join(' | ')}`)
        : ctx.fail(`Not everything could be done (${task.delegation.reason}). ${lines.join(' | ')}`);
    }
    const asks = supportAsks(textOf(task.parts));
    if (asks.length === 0) return ctx.askForInput('Which invoice is this about? Please name it, e.g. INV-2291.');
    if (asks.length > MAX_DELEGATION_CHILDREN)
      return ctx.reject(`I can take at most ${MAX_DELEGATION_CHILDREN} invoices in one message; this one names ${asks.length}.`);
    const to: DelegateTo[] = asks.map((a) =>
      a.kind === 'refund'
        ? {
            agent: 'refund-agent',
            parts: [text(`Please refund the duplicate charge on ${a.invoiceId}.`), data({ invoice_id: a.invoiceId })],
          }
        : { skill: 'invoice-lookup', parts: [text(`What is on invoice ${a.invoiceId}?`), data({ invoice_id: a.invoiceId })] },
    );
    return ctx.delegate(to, { join: 'all' });
  },
});
