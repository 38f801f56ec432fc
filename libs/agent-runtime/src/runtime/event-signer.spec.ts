import { test } from 'node:test';
import assert from 'node:assert/strict';
import { base64url, compactVerify, exportJWK, generateKeyPair } from 'jose';
import { canonicalJson, decodeEnvelope, Envelopes, Headers, type Identity } from '@mesh/contract';
import type { EventSigningKey } from '../config/agents.config.js';
import { EventSigner, SignedEventSink } from './event-signer.js';

const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'team-key-1' } as EventSigningKey;
const identity: Identity = {
  tenant: 'acme',
  agentId: 'word-count-agent',
  taskId: 'task-1',
  contextId: 'ctx-1',
  messageId: 'm-1',
  executionId: 'acme:task-1:1',
  subject: 'user-1',
  actor: 'user-1',
  scopes: [],
};
// Undefined members are not on the wire: the signature covers what a consumer decodes.
const event = Envelopes.status(identity, { seq: 2, state: 'TASK_STATE_WORKING', final: false, message: undefined });

/** What the dispatcher does: put the canonical JSON of the decoded envelope back between the JWS's parts. */
async function verify(signature: string, envelope: unknown): Promise<{ kid?: string; alg?: string }> {
  const [header, sig] = signature.split('..');
  const { protectedHeader } = await compactVerify(`${header}.${base64url.encode(canonicalJson(envelope))}.${sig}`, publicKey);
  return protectedHeader;
}

test('the signature is a detached compact EdDSA JWS naming the key, over the envelope as consumers decode it', async () => {
  const signature = await new EventSigner(jwk).sign(event);
  assert.match(signature, /^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$/);
  const header = await verify(signature, {
    kind: event.kind,
    identity: { ...identity },
    body: { seq: 2, state: 'TASK_STATE_WORKING', final: false },
  });
  assert.deepEqual(header, { alg: 'EdDSA', kid: 'team-key-1' });
  await assert.rejects(
    verify(signature, { ...event, identity: { ...identity, agentId: 'ledger-agent' } }),
    /signature verification failed/,
  );
});

test('the team sink sends every event to the team events topic with its contract headers and the signature', async () => {
  const sent: Array<{ topic: string; key: string; value: Buffer | string | null; headers?: Record<string, string> }> = [];
  const producer = {
    sendRecord: (topic: string, key: string, value: Buffer | string | null, headers?: Record<string, string>) => {
      sent.push({ topic, key, value, ...(headers ? { headers } : {}) });
      return Promise.resolve();
    },
  };
  await new SignedEventSink(producer, new EventSigner(jwk), 'p.mesh.team.events').send('p.mesh.task.events', 'task-1', event);
  assert.equal(sent.length, 1);
  const [record] = sent;
  assert.equal(record!.topic, 'p.mesh.team.events');
  assert.equal(record!.key, 'task-1');
  const decoded = decodeEnvelope({ headers: record!.headers, value: record!.value as Buffer });
  assert.equal(decoded.identity.agentId, 'word-count-agent');
  assert.deepEqual(await verify(record!.headers![Headers.signature]!, decoded), { alg: 'EdDSA', kid: 'team-key-1' });
});

test('a key that does not import fails the send, and the next send tries again', async () => {
  const signer = new EventSigner({ ...jwk, d: 'AAAA' });
  await assert.rejects(signer.sign(event));
  await assert.rejects(signer.sign(event));
});
