import { assertUnreachable, MeshError, type Envelope } from '@mesh/contract';
import { SemaphoreSlotSupplier, type SlotSupplier } from '@mesh/tool-gateway';
import type { CommandSource } from './command-source.js';
import type { TurnRunner } from './turn-runner.js';

/**
 * One agent's worker: takes commands from its channel, runs turns within its in-flight limit, and
 * routes cancels to the running turn here; every cancel is also recorded in the execution ledger,
 * so a turn whose run is read later (or by another process) is not started.
 */
export class AgentWorker {
  private readonly running = new Map<string, AbortController>();
  private readonly tenantSlots = new Map<string, SemaphoreSlotSupplier>();
  readonly slots: SlotSupplier;

  /** `tenantMaxInFlight` bounds one tenant's running turns (cancels are never held back by it). */
  constructor(
    readonly agentId: string,
    private readonly source: CommandSource,
    private readonly runner: TurnRunner,
    maxInFlight: number,
    private readonly tenantMaxInFlight?: number,
  ) {
    this.slots = new SemaphoreSlotSupplier(maxInFlight);
  }

  /** Turns running now. */
  get inFlight(): number {
    return this.running.size;
  }

  async start(): Promise<void> {
    await this.source.start((e, ctx) => this.handle(e, ctx.signal));
  }

  async stop(): Promise<void> {
    await this.source.stop();
  }

  /** `revoked` aborts when this process no longer owns the command (rebalance, shutdown timeout). */
  async handle(env: Envelope, revoked: AbortSignal = new AbortController().signal): Promise<void> {
    const key = `${env.identity.tenant}:${env.identity.taskId}`;
    switch (env.kind) {
      case 'task.run': {
        const cancel = new AbortController();
        // Registered before waiting for a slot, so a cancel that arrives meanwhile still reaches it.
        this.running.set(key, cancel);
        const tenantSlots = this.tenantSlotsOf(env.identity.tenant);
        const tenantSlot = await tenantSlots?.reserve();
        const slot = await this.slots.reserve();
        try {
          await this.runner.run(env, cancel.signal, revoked);
        } finally {
          if (this.running.get(key) === cancel) this.running.delete(key);
          slot.release();
          tenantSlot?.release();
          if (tenantSlots && tenantSlots.inUse === 0 && tenantSlots.waiting === 0) this.tenantSlots.delete(env.identity.tenant);
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

  private tenantSlotsOf(tenant: string): SemaphoreSlotSupplier | undefined {
    if (!this.tenantMaxInFlight) return undefined;
    let s = this.tenantSlots.get(tenant);
    if (!s) this.tenantSlots.set(tenant, (s = new SemaphoreSlotSupplier(this.tenantMaxInFlight)));
    return s;
  }

  /** Turns of `tenant` running now (0 when no tenant limit is configured). */
  tenantInFlight(tenant: string): number {
    return this.tenantSlots.get(tenant)?.inUse ?? 0;
  }
}
