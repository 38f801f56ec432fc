import { Controller, Get, HttpCode, Inject, Module, Res, type DynamicModule, type BeforeApplicationShutdown } from '@nestjs/common';
import cluster from 'node:cluster';
import type { Response } from 'express';

/** One dependency readiness depends on (Kafka, Postgres, …). `check` rejects when it is unusable. */
export interface HealthProbe {
  readonly name: string;
  check(): Promise<void>;
}

export const HEALTH_PROBES = Symbol('HEALTH_PROBES');

/** Lifecycle phase: readiness is false while starting or draining, which is not the same as broken. */
export type ServicePhase = 'starting' | 'ready' | 'draining';

/** Holds the lifecycle phase; the app marks itself ready after listen, draining on shutdown. */
export class ServiceLifecycle implements BeforeApplicationShutdown {
  phase: ServicePhase = 'starting';
  markReady(): void {
    this.phase = 'ready';
  }
  /** Call before draining work, so readiness fails (traffic moves away) while liveness stays up. */
  markDraining(): void {
    this.phase = 'draining';
  }
  beforeApplicationShutdown(): void {
    this.phase = 'draining';
  }
}

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref())]);

@Controller()
export class HealthController {
  constructor(
    @Inject(HEALTH_PROBES) private readonly probes: HealthProbe[],
    @Inject(ServiceLifecycle) private readonly lifecycle: ServiceLifecycle,
  ) {}

  /** Readiness: 200 only when ready and every dependency answers. */
  @Get('healthz')
  async readiness(@Res() res: Response): Promise<void> {
    const checks: Record<string, string> = {};
    await Promise.all(
      this.probes.map(async (p) => {
        try {
          await withTimeout(p.check(), 3000);
          checks[p.name] = 'ok';
        } catch (err) {
          checks[p.name] = `failing: ${err instanceof Error ? err.message : String(err)}`;
        }
      }),
    );
    const healthy = Object.values(checks).every((c) => c === 'ok');
    const status = this.lifecycle.phase !== 'ready' ? this.lifecycle.phase : healthy ? 'ok' : 'broken';
    res.status(status === 'ok' ? 200 : 503).json({ status, checks });
  }

  /**
   * Liveness: the process answers; a draining process is still alive. In a service run as several
   * processes (node:cluster) `worker` names the one that answered (its cluster worker id).
   */
  @Get('livez')
  @HttpCode(200)
  liveness(): { status: ServicePhase; worker?: number } {
    return { status: this.lifecycle.phase, ...(cluster.worker ? { worker: cluster.worker.id } : {}) };
  }
}

/** `/healthz` (readiness) and `/livez` (liveness) over the given probes. */
@Module({})
export class HealthModule {
  static forProbes(probes: HealthProbe[]): DynamicModule {
    return {
      module: HealthModule,
      global: true,
      controllers: [HealthController],
      providers: [{ provide: HEALTH_PROBES, useValue: probes }, ServiceLifecycle],
      exports: [ServiceLifecycle],
    };
  }
}
