import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { agentLabel, privateAgentAlias } from './agent-labels.js';
import { MeshMetrics } from './metrics.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

test('a public agent is named by its id, any other by private-<12 hex of its SHA-256>; placeholders pass', () => {
  const isPublic = (id: string) => id === 'open';
  assert.equal(agentLabel('open', isPublic), 'open');
  assert.equal(agentLabel('secret', isPublic), `private-${sha('secret').slice(0, 12)}`);
  assert.equal(privateAgentAlias('secret'), agentLabel('secret', isPublic));
  assert.equal(agentLabel('_other', isPublic), '_other');
  assert.equal(agentLabel('_unknown', isPublic), '_unknown');
});

test('MeshMetrics names non-public agents by alias in every agent-labelled counter, before bounding pairs', async () => {
  const m = new MeshMetrics({ defaultMetrics: false, labels: { maxTenantAgentPairs: 2 } });
  m.namePublicAgents((id) => id === 'open');
  m.tasks.inc({ tenant: 'acme', agent: 'secret', outcome: 'accepted' });
  m.tasks.inc({ tenant: 'acme', agent: 'open', outcome: 'accepted' });
  m.admissionRefusals.inc({ tenant: 'acme', agent: 'secret', reason: 'NO_HEALTHY_WORKER' });
  m.dedupHits.inc({ kind: 'message_id', agent: 'secret' });
  const text = await m.registry.metrics();
  const alias = privateAgentAlias('secret');
  assert.match(text, new RegExp(`^mesh_tasks_total\\{tenant="acme",agent="${alias}",outcome="accepted"\\} 1$`, 'm'));
  assert.match(text, /^mesh_tasks_total\{tenant="acme",agent="open",outcome="accepted"\} 1$/m);
  assert.match(text, new RegExp(`^mesh_admission_refusals_total\\{tenant="acme",agent="${alias}",reason="NO_HEALTHY_WORKER"\\} 1$`, 'm'));
  assert.match(text, new RegExp(`^mesh_dedup_hits_total\\{kind="message_id",agent="${alias}"\\} 1$`, 'm'));
  assert.doesNotMatch(text, /secret/);
});

test('until the app says which agents are public, none is named', async () => {
  const m = new MeshMetrics({ defaultMetrics: false });
  m.tasks.inc({ tenant: 'acme', agent: 'anyone', outcome: 'accepted' });
  assert.doesNotMatch(await m.registry.metrics(), /anyone/);
});
