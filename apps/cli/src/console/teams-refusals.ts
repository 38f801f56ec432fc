// The overview's "Teams and refusals": the dispatcher's team bindings (GET /ops/teams, ops token)
// and what it refused, from its /metrics: events it did not believe and token exchanges it denied.
import type { TeamBinding } from '../teams/team-binding.js';
import { samplesOf } from './prometheus-text.js';

/** A reason and how often it was refused since the dispatcher started. */
export interface RefusalCount {
  reason: string;
  count: number;
}

/** The section as the page shows it; a source that could not be read is named, never fatal. */
export interface TeamsAndRefusals {
  /** The team bindings, revoked ones too; null when they could not be read (`teamsUnavailable` says why). */
  teams: TeamBinding[] | null;
  teamsUnavailable?: string;
  /** Refused team events by reason (mesh_events_refused_total); null when /metrics could not be read. */
  refusedEvents: RefusalCount[] | null;
  /** Refused token exchanges by reason (mesh_token_exchanges_total{outcome="refused"}). */
  refusedExchanges: RefusalCount[] | null;
  metricsUnavailable?: string;
}

const EVENTS = 'mesh_events_refused_total';
const EXCHANGES = 'mesh_token_exchanges_total';

/** Refusals by reason from the dispatcher's metrics text, most frequent first; zero counts left out. */
export function refusalsOf(metricsText: string): { refusedEvents: RefusalCount[]; refusedExchanges: RefusalCount[] } {
  const events = new Map<string, number>();
  const exchanges = new Map<string, number>();
  for (const s of samplesOf(metricsText, [EVENTS, EXCHANGES])) {
    const reason = s.labels.reason ?? '(none)';
    if (s.name === EVENTS) events.set(reason, (events.get(reason) ?? 0) + s.value);
    else if (s.labels.outcome === 'refused') exchanges.set(reason, (exchanges.get(reason) ?? 0) + s.value);
  }
  return { refusedEvents: sorted(events), refusedExchanges: sorted(exchanges) };
}

/** The section from what each source gave: its value, or the error that kept it away. */
export function teamsAndRefusals(
  teams: { ok: TeamBinding[] } | { unavailable: string },
  metrics: { ok: string } | { unavailable: string },
): TeamsAndRefusals {
  return {
    ...('ok' in teams
      ? { teams: [...teams.ok].sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null) || a.name.localeCompare(b.name)) }
      : { teams: null, teamsUnavailable: teams.unavailable }),
    ...('ok' in metrics
      ? refusalsOf(metrics.ok)
      : { refusedEvents: null, refusedExchanges: null, metricsUnavailable: metrics.unavailable }),
  };
}

function sorted(counts: Map<string, number>): RefusalCount[] {
  return [...counts]
    .filter(([, count]) => count > 0)
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}
