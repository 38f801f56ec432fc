import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { canonicalJson, decodeEnvelope, encodeEnvelope, Envelopes, Headers, type Identity, type TaskEvent } from '@mesh/contract';
import type { TeamBinding, TeamEventKey } from './team-binding.js';
import { TeamBindings } from './team-bindings.js';
import { EventSignatures } from './event-signatures.js';

async function keyPair(kid: string): Promise<{ publicJwk: TeamEventKey; privateJwk: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const pub = await exportJWK(publicKey);
  return { publicJwk: { kty: 'OKP', crv: 'Ed25519', kid, x: pub.x! }, privateJwk: { ...(await exportJWK(privateKey)), kid } };
}

/** A detached compact JWS over the canonical JSON of the event as the projector decodes it (the wire rule). */
async function sign(event: TaskEvent, jwk: JWK, payload: unknown = decodeEnvelope(encodeEnvelope(event))): Promise<string> {
  const jws = await new CompactSign(new TextEncoder().encode(canonicalJson(payload)))
    .setProtectedHeader({ alg: 'EdDSA', kid: jwk.kid! })
    .sign(await importJWK(jwk, 'EdDSA'));
  const [h, , s] = jws.split('.');
  return `${h}..${s}`;
}

function team(name: string, agents: string[], keys: TeamEventKey[], revokedAt: string | null = null, tenant = 'acme'): TeamBinding {
  return {
    name,
    tenant,
    agents,
    eventKeys: { keys },
    toolAudiences: [],
    kafkaPrincipal: null,
    createdAt: new Date().toISOString(),
    revokedAt,
  };
}

function eventOf(agentId: string, tenant = 'acme'): TaskEvent {
  const identity: Identity = {
    tenant,
    agentId,
    taskId: 'task-1',
    contextId: 'ctx-1',
    messageId: 'm-1',
    executionId: `${tenant}:task-1:1`,
    subject: 'user-1',
    actor: 'user-1',
  };
  // As the projector gets it: decoded from the wire.
  return decodeEnvelope(encodeEnvelope(Envelopes.status(identity, { seq: 1, state: 'TASK_STATE_WORKING', final: false }))) as TaskEvent;
}

const ka = await keyPair('ka');
const kb = await keyPair('kb');
const kr = await keyPair('kr');
const unbound = await keyPair('nobody');
let teams: TeamBinding[] = [
  team('words', ['word-count-agent'], [ka.publicJwk]),
  team('ledger', ['ledger-agent'], [kb.publicJwk]),
  team('gone', ['old-agent'], [kr.publicJwk], new Date().toISOString()),
];
let reads = 0;
const bindings = new TeamBindings(
  {
    list: () => {
      reads += 1;
      return Promise.resolve(teams);
    },
  },
  { minRefreshGapMs: 50 },
);
await bindings.start();
bindings.stop();
const signatures = new EventSignatures(bindings);

test("an event signed by the key of its agent's team is believed", async () => {
  const event = eventOf('word-count-agent');
  assert.deepEqual(await signatures.check(event, { [Headers.signature]: await sign(event, ka.privateJwk) }), {
    ok: true,
    team: 'words',
    kid: 'ka',
  });
});

test('an event without a signature is refused as unsigned', async () => {
  assert.deepEqual(await signatures.check(eventOf('word-count-agent'), {}), { ok: false, reason: 'unsigned' });
});

test('a payload changed after signing, or a signature that is no detached JWS, is a bad signature', async () => {
  const event = eventOf('word-count-agent');
  const signature = await sign(event, ka.privateJwk);
  const tampered = { ...event, body: { ...event.body, state: 'TASK_STATE_COMPLETED' } } as TaskEvent;
  assert.deepEqual(await signatures.check(tampered, { [Headers.signature]: signature }), { ok: false, reason: 'bad-signature', kid: 'ka' });
  const otherTask = { ...event, identity: { ...event.identity, taskId: 'task-2' } };
  assert.deepEqual(await signatures.check(otherTask, { [Headers.signature]: signature }), {
    ok: false,
    reason: 'bad-signature',
    kid: 'ka',
  });
  for (const garbage of ['x', `${signature.split('..')[0]}.e30.${signature.split('..')[1]}`, 'e30..AAAA', '!!..!!']) {
    assert.equal((await signatures.check(event, { [Headers.signature]: garbage })).ok, false, garbage);
    assert.equal(
      ((await signatures.check(event, { [Headers.signature]: garbage })) as { reason: string }).reason,
      'bad-signature',
      garbage,
    );
  }
  // Signed by another key under ka's id.
  const forged = await sign(event, { ...unbound.privateJwk, kid: 'ka' });
  assert.deepEqual(await signatures.check(event, { [Headers.signature]: forged }), { ok: false, reason: 'bad-signature', kid: 'ka' });
});

test('a key id no binding holds is an unknown key, looked up again in the registry first', async () => {
  const event = eventOf('word-count-agent');
  const before = reads;
  assert.deepEqual(await signatures.check(event, { [Headers.signature]: await sign(event, unbound.privateJwk) }), {
    ok: false,
    reason: 'unknown-key',
    kid: 'nobody',
  });
  assert.equal(reads, before + 1, 'one read of the registry for the unknown key id');
});

test("a team's key signing for another team's agent or a platform agent is refused as not-team-agent", async () => {
  for (const event of [eventOf('ledger-agent'), eventOf('echo-agent')]) {
    assert.deepEqual(await signatures.check(event, { [Headers.signature]: await sign(event, ka.privateJwk) }), {
      ok: false,
      reason: 'not-team-agent',
      kid: 'ka',
    });
  }
});

test("another tenant's task of the team's own (public) agent is believed: the projection checks the task", async () => {
  const event = eventOf('word-count-agent', 'globex');
  assert.deepEqual(await signatures.check(event, { [Headers.signature]: await sign(event, ka.privateJwk) }), {
    ok: true,
    team: 'words',
    kid: 'ka',
  });
});

test("a revoked team's key is refused as revoked", async () => {
  const event = eventOf('old-agent');
  assert.deepEqual(await signatures.check(event, { [Headers.signature]: await sign(event, kr.privateJwk) }), {
    ok: false,
    reason: 'revoked',
    kid: 'kr',
  });
});

test('a binding made elsewhere is believed at the first event signed with its key; unknown ids read the registry at most once per gap', async () => {
  const fresh = await keyPair('fresh');
  teams = [...teams, team('fresh', ['fresh-agent'], [fresh.publicJwk])];
  const event = eventOf('fresh-agent');
  assert.equal((await signatures.check(event, { [Headers.signature]: await sign(event, fresh.privateJwk) })).ok, true);
  const before = reads;
  const stranger = eventOf('fresh-agent');
  const signature = await sign(stranger, unbound.privateJwk);
  const verdicts = await Promise.all(Array.from({ length: 20 }, () => signatures.check(stranger, { [Headers.signature]: signature })));
  assert.ok(verdicts.every((v) => !v.ok && v.reason === 'unknown-key'));
  assert.equal(reads, before + 1, 'twenty unknown events at once share one read');
});

test('a failed registry read fails the check (the projector retries it) instead of refusing the event', async () => {
  const failing = new TeamBindings({ list: () => Promise.reject(new Error('database down')) }, { minRefreshGapMs: 0 });
  const event = eventOf('word-count-agent');
  await assert.rejects(
    new EventSignatures(failing).check(event, { [Headers.signature]: await sign(event, ka.privateJwk) }),
    /database down/,
  );
});

test("the bindings answer an agent's keys and tool audiences, nothing for an agent no live team owns", () => {
  assert.deepEqual(bindings.keysFor('word-count-agent'), [ka.publicJwk]);
  assert.equal(bindings.keysFor('old-agent'), undefined);
  assert.equal(bindings.keysFor('echo-agent'), undefined);
  assert.deepEqual(bindings.toolAudiences('ledger-agent'), new Set());
  assert.equal(bindings.toolAudiences('echo-agent'), undefined);
});

test("tool audiences: a team's agent gets its team's, a revoked team's agent none, a platform agent any", async () => {
  const audiences = new TeamBindings({
    list: () =>
      Promise.resolve([
        { ...team('words', ['word-count-agent', 'moved-agent'], [ka.publicJwk]), toolAudiences: ['billing-tools'] },
        team('gone', ['old-agent', 'moved-agent'], [kr.publicJwk], new Date().toISOString()),
      ]),
  });
  await audiences.refresh();
  assert.deepEqual(await audiences.allowed('word-count-agent'), new Set(['billing-tools']));
  assert.deepEqual(await audiences.allowed('moved-agent'), new Set(['billing-tools']), 'bound again since: its live team counts');
  assert.deepEqual(await audiences.allowed('old-agent'), new Set());
  assert.equal(await audiences.allowed('echo-agent'), 'any');
});
