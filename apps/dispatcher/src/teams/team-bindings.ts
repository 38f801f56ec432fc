import { sleep } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { TeamBinding, TeamEventKey } from './team-binding.js';

/** What a key id stands for: a live team's key, only revoked teams' keys, or nothing known. */
export type KeyBinding =
  { state: 'live'; team: TeamBinding; key: TeamEventKey } | { state: 'revoked'; team: string } | { state: 'unknown' };

/** Where the key ids come from (the verifier's view of {@link TeamBindings}). */
export interface TeamKeys {
  /** The key id's binding; an id not known yet is looked up again in the registry first. */
  keyOf(kid: string): Promise<KeyBinding>;
  /** The live team owning the agent, if any. */
  ownerOf(agentId: string): TeamBinding | undefined;
}

/** Options of {@link TeamBindings}. */
export interface TeamBindingsOptions {
  /** How often the bindings are read again (revocations on another replica take up to this long). */
  refreshMs?: number;
  /** Least time between two reads; an unknown key id waits for the next one to start after it came. */
  minRefreshGapMs?: number;
  logger?: Logger;
}

interface Snapshot {
  owners: Map<string, TeamBinding>;
  /** Agents of revoked teams that no live team owns now. */
  orphans: Set<string>;
  liveKeys: Map<string, { team: TeamBinding; key: TeamEventKey }>;
  revokedKeys: Map<string, string>;
}

const EMPTY: Snapshot = { owners: new Map(), orphans: new Set(), liveKeys: new Map(), revokedKeys: new Map() };

/**
 * The team bindings as the projector and the token exchange read them: a snapshot of the registry
 * read every `refreshMs` (30 s), and at once (at most once per `minRefreshGapMs`, 1 s) when a key
 * id nobody knows arrives, so a binding made on another replica is believed within a second.
 */
export class TeamBindings implements TeamKeys {
  private snapshot = EMPTY;
  private lastStart = 0;
  private scheduled?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly refreshMs: number;
  private readonly gapMs: number;
  private readonly log: Logger;

  constructor(
    private readonly source: { list(): Promise<TeamBinding[]> },
    opts: TeamBindingsOptions = {},
  ) {
    this.refreshMs = opts.refreshMs ?? 30_000;
    this.gapMs = opts.minRefreshGapMs ?? 1000;
    this.log = (opts.logger ?? silentLogger).child({ src: 'team-bindings' });
  }

  /** Reads the bindings now, then every `refreshMs`. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch((err: unknown) => this.log.warn({ err: String(err) }, 'reading the team bindings failed'));
    }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Reads the registry now (after a local change, so this replica knows it at once). */
  async refresh(): Promise<void> {
    this.lastStart = Date.now();
    const teams = await this.source.list();
    const next: Snapshot = { owners: new Map(), orphans: new Set(), liveKeys: new Map(), revokedKeys: new Map() };
    for (const team of teams) {
      if (team.revokedAt !== null) {
        for (const key of team.eventKeys.keys) next.revokedKeys.set(key.kid, team.name);
        for (const agent of team.agents) next.orphans.add(agent);
        continue;
      }
      for (const agent of team.agents) next.owners.set(agent, team);
      for (const key of team.eventKeys.keys) next.liveKeys.set(key.kid, { team, key });
    }
    for (const agent of next.owners.keys()) next.orphans.delete(agent);
    this.snapshot = next;
  }

  /** The public JWKs of the live team owning the agent; undefined when no team owns it. */
  keysFor(agentId: string): TeamEventKey[] | undefined {
    return this.snapshot.owners.get(agentId)?.eventKeys.keys;
  }

  /** The tool audiences of the live team owning the agent; undefined when no team owns it. */
  toolAudiences(agentId: string): ReadonlySet<string> | undefined {
    const team = this.snapshot.owners.get(agentId);
    return team ? new Set(team.toolAudiences) : undefined;
  }

  /**
   * Which tool audiences the agent may get tokens for (the token exchange's ToolAudiencePolicy):
   * a team's agent its team's; an agent whose team was revoked none (its worker is no longer
   * trusted); an agent no team ever held — a platform agent — any.
   */
  allowed(agentId: string): Promise<ReadonlySet<string> | 'any'> {
    const audiences = this.toolAudiences(agentId);
    if (audiences) return Promise.resolve(audiences);
    return Promise.resolve(this.snapshot.orphans.has(agentId) ? new Set<string>() : 'any');
  }

  ownerOf(agentId: string): TeamBinding | undefined {
    return this.snapshot.owners.get(agentId);
  }

  async keyOf(kid: string): Promise<KeyBinding> {
    let found = this.known(kid);
    if (found.state !== 'unknown') return found;
    await this.refreshAfterNow();
    found = this.known(kid);
    return found;
  }

  private known(kid: string): KeyBinding {
    const live = this.snapshot.liveKeys.get(kid);
    if (live) return { state: 'live', ...live };
    const revoked = this.snapshot.revokedKeys.get(kid);
    return revoked !== undefined ? { state: 'revoked', team: revoked } : { state: 'unknown' };
  }

  /** A read that starts after this call, shared by every caller waiting for one; a failure rejects them all. */
  private refreshAfterNow(): Promise<void> {
    this.scheduled ??= sleep(Math.max(0, this.lastStart + this.gapMs - Date.now())).then(() => {
      // Cleared as the read starts: a key id arriving during it waits for the next.
      this.scheduled = undefined;
      return this.refresh();
    });
    return this.scheduled;
  }
}
