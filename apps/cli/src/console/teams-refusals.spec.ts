import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TeamBinding } from '../teams/team-binding.js';
import { refusalsOf, teamsAndRefusals } from './teams-refusals.js';

const binding = (name: string, revokedAt: string | null = null): TeamBinding => ({
  name,
  tenant: 'acme',
  agents: [`${name}-agent`],
  toolAudiences: ['billing-tools'],
  kafkaPrincipal: `User:team-${name}`,
  keyIds: [`${name}-1`],
  createdAt: '2026-01-01T00:00:00.000Z',
  revokedAt,
});

const METRICS = `# TYPE mesh_events_refused_total counter
mesh_events_refused_total{reason="unsigned"} 1
mesh_events_refused_total{reason="bad-signature"} 4
mesh_events_refused_total{reason="revoked"} 0
# TYPE mesh_token_exchanges_total counter
mesh_token_exchanges_total{outcome="issued",reason="ok"} 30
mesh_token_exchanges_total{outcome="refused",reason="resource_not_allowed"} 2
mesh_token_exchanges_total{outcome="refused",reason="expired"} 2
mesh_grants_signed_total 31
`;

test('refusals by reason, most frequent first; issued exchanges and zero counts are not refusals', () => {
  assert.deepEqual(refusalsOf(METRICS), {
    refusedEvents: [
      { reason: 'bad-signature', count: 4 },
      { reason: 'unsigned', count: 1 },
    ],
    refusedExchanges: [
      { reason: 'expired', count: 2 },
      { reason: 'resource_not_allowed', count: 2 },
    ],
  });
  // A dispatcher that refused nothing yet exposes no sample of either family.
  assert.deepEqual(refusalsOf('# TYPE mesh_events_refused_total counter\n'), { refusedEvents: [], refusedExchanges: [] });
});

test('the section lists live teams before revoked ones, each by name', () => {
  const s = teamsAndRefusals({ ok: [binding('zeta'), binding('alpha', '2026-02-01T00:00:00.000Z'), binding('beta')] }, { ok: METRICS });
  assert.deepEqual(
    s.teams?.map((t) => t.name),
    ['beta', 'zeta', 'alpha'],
  );
  assert.equal(s.teamsUnavailable, undefined);
  assert.equal(s.metricsUnavailable, undefined);
  assert.equal(s.refusedEvents?.length, 2);
});

test('a source that could not be read is named in the section, the other still shown', () => {
  const noTeams = teamsAndRefusals({ unavailable: 'dispatcher answered 401 to GET /ops/teams' }, { ok: METRICS });
  assert.equal(noTeams.teams, null);
  assert.equal(noTeams.teamsUnavailable, 'dispatcher answered 401 to GET /ops/teams');
  assert.deepEqual(noTeams.refusedExchanges, refusalsOf(METRICS).refusedExchanges);

  const noMetrics = teamsAndRefusals({ ok: [] }, { unavailable: 'cannot reach the dispatcher at http://127.0.0.1:9: ECONNREFUSED' });
  assert.deepEqual(noMetrics.teams, []);
  assert.equal(noMetrics.refusedEvents, null);
  assert.equal(noMetrics.refusedExchanges, null);
  assert.match(noMetrics.metricsUnavailable ?? '', /ECONNREFUSED/);
});
