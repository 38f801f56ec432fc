import type { DelegatedChild, DelegateOptions, DelegateTo, TurnOutcome } from '@mesh/agent-sdk';
import { childTaskId, MAX_DELEGATION_CHILDREN, MeshError } from '@mesh/contract';
import { toWireParts } from './a2a-wire.js';

/**
 * The outcome of `ctx.delegate`: each child's id derived from this execution, its step and its
 * ask, so a re-run of the turn asks for the same children (the dispatcher creates each once).
 */
export function delegatedOutcome(executionId: string, to: DelegateTo[], options: DelegateOptions = {}): TurnOutcome {
  if (!Array.isArray(to) || to.length === 0 || to.length > MAX_DELEGATION_CHILDREN)
    throw new MeshError(
      'CONTRACT_VIOLATION',
      `delegate takes 1 to ${MAX_DELEGATION_CHILDREN} children, got ${Array.isArray(to) ? to.length : 'none'}`,
    );
  const join = options.join ?? 'all';
  if (join !== 'all' && join !== 'first') throw new MeshError('CONTRACT_VIOLATION', `delegate: join must be "all" or "first"`);
  if (options.timeoutMs !== undefined && !(Number.isSafeInteger(options.timeoutMs) && options.timeoutMs > 0))
    throw new MeshError('CONTRACT_VIOLATION', 'delegate: timeoutMs must be a positive integer');
  const children: DelegatedChild[] = to.map((c, step) => {
    if ((c.agent === undefined) === (c.skill === undefined))
      throw new MeshError('CONTRACT_VIOLATION', `delegate: child ${step} needs exactly one of agent and skill`);
    if (!Array.isArray(c.parts) || c.parts.length === 0) throw new MeshError('CONTRACT_VIOLATION', `delegate: child ${step} has no parts`);
    const ask = { ...(c.agent !== undefined ? { agentId: c.agent } : { skill: c.skill }), parts: toWireParts(c.parts) };
    return {
      step,
      taskId: childTaskId(executionId, step, ask),
      ...(c.agent !== undefined ? { agent: c.agent } : { skill: c.skill! }),
      parts: c.parts,
      ...(c.scopes ? { scopes: [...c.scopes] } : {}),
    };
  });
  const names = children.map((c) => c.agent ?? `skill ${c.skill}`).join(', ');
  return {
    state: 'delegated',
    children,
    join,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    message: {
      role: 'agent',
      parts: [{ type: 'text', text: `Delegated to ${names}.` }],
      metadata: { 'mesh/delegated_task_ids': children.map((c) => c.taskId) },
    },
  };
}
