import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { remoteAgentSpecs } from './remote-agents-config.js';

const spec = { id: 'quotes-agent', cardUrl: 'https://quotes.example/.well-known/agent-card.json' };

test('specs come from BRIDGE_REMOTE_AGENTS or from the file BRIDGE_REMOTE_AGENTS_FILE names', () => {
  assert.equal(remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS: JSON.stringify([spec]) })[0]!.id, 'quotes-agent');
  const file = join(mkdtempSync(join(tmpdir(), 'bridge-')), 'agents.json');
  writeFileSync(file, JSON.stringify([spec]));
  assert.equal(remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS_FILE: file })[0]!.cardUrl, spec.cardUrl);
});

test('missing, doubled, unreadable or invalid configuration is refused naming the source', () => {
  assert.throws(() => remoteAgentSpecs({}), /BRIDGE_REMOTE_AGENTS \(or BRIDGE_REMOTE_AGENTS_FILE\) is not set/);
  assert.throws(() => remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS: '[]', BRIDGE_REMOTE_AGENTS_FILE: '/x' }), /not both/);
  assert.throws(
    () => remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS_FILE: '/nonexistent/agents.json' }),
    /BRIDGE_REMOTE_AGENTS_FILE \(\/nonexistent/,
  );
  assert.throws(() => remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS: '{oops' }), /BRIDGE_REMOTE_AGENTS: not JSON/);
  assert.throws(() => remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS: '[]' }), /the array is empty/);
  assert.throws(
    () => remoteAgentSpecs({ BRIDGE_REMOTE_AGENTS: JSON.stringify([{ ...spec, maxInFlight: 0 }]) }),
    /BRIDGE_REMOTE_AGENTS: remote agent \[0\]: maxInFlight/,
  );
});
