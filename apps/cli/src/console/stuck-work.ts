/** Work that waits and will not move by itself: what the console puts above everything else. */
export interface StuckWarning {
  kind: 'lag-without-consumer' | 'past-start-by';
  agent: string;
  taskId?: string;
  text: string;
}

/**
 * - lag with no consumer: commands wait and the agent's worker group has no member to read them;
 * - past start-by: a task still `submitted` longer than the dispatcher's start timeout after its
 *   turn was accepted (its status time); no worker started it in time and none will.
 */
export function stuckWorkWarnings(input: {
  now: number;
  startTimeoutMs: number;
  lagWithoutConsumer: Array<{ agent: string; lag: number }>;
  submitted: Array<{ agent: string; id: string; state: string; updated: string }>;
}): StuckWarning[] {
  const out: StuckWarning[] = input.lagWithoutConsumer.map((a) => ({
    kind: 'lag-without-consumer',
    agent: a.agent,
    text: `${a.agent}: ${a.lag} command(s) wait and no worker is in its group to read them`,
  }));
  if (input.startTimeoutMs > 0)
    for (const t of input.submitted) {
      const accepted = Date.parse(t.updated);
      if (t.state !== 'submitted' || Number.isNaN(accepted)) continue;
      const startBy = accepted + input.startTimeoutMs;
      if (startBy < input.now)
        out.push({
          kind: 'past-start-by',
          agent: t.agent,
          taskId: t.id,
          text: `${t.agent}: task ${t.id} is past its start-by time (${new Date(startBy).toISOString()}) and no worker started it`,
        });
    }
  return out;
}
