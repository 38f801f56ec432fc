import { assertUnreachable, MeshError, sleep, type Envelope } from '@mesh/contract';
import { SemaphoreSlotSupplier, type SlotSupplier } from '@mesh/tool-gateway';
import type { TurnRunner } from './turn-runner.js';

/**
 * One agent's worker: handles the commands of its channel (delivered by the CommandController),
 * runs turns within its in-flight limit, and routes cancels to the running turn here; every cancel
 * is also recorded in the execution ledger, so a turn whose run is read later (or by another
 * process) is not started. The per-tenant limit is the consumer's (the bus holds a tenant's runs
 * beyond it back; see agents-runtime.ts).
 */
export class AgentWorker {
  private readonly running = new Map<string, AbortController>();
  readonly slots: SlotSupplier;
  /** Runs wait until then (a remote agent asked for a pause); cancels never wait. */
  private pausedUntil = 0;

  constructor(
    readonly agentId: string,
    private readonly runner: TurnRunner,
    maxInFlight: number,
  ) {
    this.slots = new SemaphoreSlotSupplier(maxInFlight);
  }

  /** Turns running now. */
  get inFlight(): number {
    return this.running.size;
  }

  /**
   * Holds this agent's runs back for `ms` (the longest pause asked wins). Its consumer's buffer then
   * fills and the bus pauses the agent's partitions; other agents of the process are not affected.
   */
  pauseFor(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }

  /** `revoked` aborts when this process no longer owns the command (rebalance, shutdown timeout). */
  async handle(env: Envelope, revoked: AbortSignal = new AbortController().signal): Promise<void> {
    const key = `${env.identity.tenant}:${env.identity.taskId}`;
    switch (env.kind) {
      case 'task.run': {
        const cancel = new AbortController();
        // Registered before waiting for a slot, so a cancel that arrives meanwhile still reaches it.
        this.running.set(key, cancel);
        for (let wait = this.pausedUntil - Date.now(); wait > 0 && !revoked.aborted; wait = this.pausedUntil - Date.now())
          await sleep(wait, revoked).catch(() => undefined);
        const slot = await this.slots.reserve();
        try {
          await this.runner.run(env, cancel.signal, revoked);
        } finally {
          if (this.running.get(key) === cancel) this.running.delete(key);
          slot.release();
        }
        return;
      }
      case 'task.cancel': {
        this.running.get(key)?.abort(new MeshError('CANCELLED', env.body.reason ?? 'canceled'));
        // Durable: a failed write throws, and the bus delivers the cancel again.
        await this.runner.recordCancel(env);
        return;
      }
      case 'task.status':
      case 'task.artifact':
        return; // events never belong on a command channel; ignore rather than fail the partition
      default:
        assertUnreachable(env);
    }
  }
}
