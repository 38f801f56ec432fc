import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolGrants } from '@mesh/contract';
import { GrantExchangeMinter, usableUntil } from './grant-exchange.js';

/** A grant-shaped JWT (the minter reads only its jti; the endpoint verifies it). */
const grant = (jti: string) => `${b64({ alg: 'EdDSA' })}.${b64({ jti })}.sig`;
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

function endpoint(answer: (form: URLSearchParams) => { status: number; body: object }) {
  const forms: URLSearchParams[] = [];
  const fetch = async (_url: string | URL, init?: RequestInit) => {
    const form = new URLSearchParams(String(init?.body));
    forms.push(form);
    await new Promise((r) => setTimeout(r, 5));
    const a = answer(form);
    return new Response(JSON.stringify(a.body), { status: a.status, headers: { 'content-type': 'application/json' } });
  };
  return { forms, fetch };
}

const issued = (form: URLSearchParams) => ({
  status: 200,
  body: {
    access_token: `tok-${form.get('resource')}-${form.get('requested_token_type')}`,
    issued_token_type: ToolGrants.accessTokenType,
    token_type: 'Bearer',
    expires_in: 60,
  },
});

test('a token is used until 10 s before it expires', () => {
  assert.equal(usableUntil(1_000_000, 60, 10_000), 1_050_000);
});

test('one exchange per (grant, resource, kind): concurrent requests share it, later ones hit the cache until it is due', async () => {
  let now = 1_000_000;
  const ep = endpoint(issued);
  const m = new GrantExchangeMinter({ tokenUrl: 'http://d.test/oauth/token', fetch: ep.fetch, now: () => now });
  const claims = { audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1', grant: grant('g1') };
  const [a, b] = await Promise.all([m.mint(claims), m.mint(claims)]);
  assert.equal(a, b);
  assert.equal(ep.forms.length, 1, 'single flight');
  const f = ep.forms[0];
  assert.equal(f.get('grant_type'), ToolGrants.grantType);
  assert.equal(f.get('subject_token_type'), ToolGrants.jwtTokenType);
  assert.equal(f.get('resource'), 'billing-tools');
  assert.equal(f.get('requested_token_type'), ToolGrants.accessTokenType);
  now += 49_000;
  await m.mint(claims);
  assert.equal(ep.forms.length, 1, 'cached for 50 s');
  now += 2_000;
  await m.mint(claims);
  assert.equal(ep.forms.length, 2, 'exchanged again 10 s before expiry');
  await m.mint({ ...claims, audience: 'crm-tools' });
  await m.mint({ ...claims, grant: grant('g2') });
  const conn = await m.mintConnection({ audience: 'billing-tools', subject: 'agent-mesh/refund-agent', grant: grant('g1') });
  assert.match(conn, /connection/);
  assert.equal(ep.forms.length, 5, 'another resource, another grant and a connection token each need their own');
});

test('no grant: UNAUTHENTICATED without asking the endpoint; a refusal is UNAUTHENTICATED naming the OAuth error', async () => {
  const ep = endpoint(() => ({ status: 400, body: { error: 'invalid_grant', error_description: 'the task of the grant has ended' } }));
  const m = new GrantExchangeMinter({ tokenUrl: 'http://d.test/oauth/token', fetch: ep.fetch });
  await assert.rejects(
    m.mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1' }),
    (e: { code?: string }) => e.code === 'UNAUTHENTICATED',
  );
  await assert.rejects(
    m.mintConnection({ audience: 'billing-tools', subject: 'w' }),
    (e: { code?: string }) => e.code === 'UNAUTHENTICATED',
  );
  assert.equal(ep.forms.length, 0);
  await assert.rejects(
    m.mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1', grant: grant('g1') }),
    (e: { code?: string; message?: string }) =>
      e.code === 'UNAUTHENTICATED' && /invalid_grant \(the task of the grant has ended\)/.test(e.message ?? ''),
  );
  assert.equal(m.size, 0, 'a refusal is not cached');
});

test('an unreachable endpoint or a 5xx is UNAVAILABLE and retryable', async () => {
  const down = new GrantExchangeMinter({ tokenUrl: 'http://d.test/oauth/token', fetch: () => Promise.reject(new Error('ECONNREFUSED')) });
  await assert.rejects(
    down.mint({ audience: 'b', tenant: 'acme', subject: 's', taskId: 't', grant: grant('g') }),
    (e: { code?: string; retryable?: boolean }) => e.code === 'UNAVAILABLE' && e.retryable === true,
  );
  const ep = endpoint(() => ({ status: 503, body: {} }));
  const busy = new GrantExchangeMinter({ tokenUrl: 'http://d.test/oauth/token', fetch: ep.fetch });
  await assert.rejects(
    busy.mint({ audience: 'b', tenant: 'acme', subject: 's', taskId: 't', grant: grant('g') }),
    (e: { code?: string; retryable?: boolean }) => e.code === 'UNAVAILABLE' && e.retryable === true,
  );
});
