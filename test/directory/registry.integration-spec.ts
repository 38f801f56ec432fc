import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyAgentCardSignature, type AgentCard } from '@a2a-js/sdk';
import { SignJWT, type JWK } from 'jose';
import { card, client, KEYS, keyPair, startTestDirectory, type Reply } from './directory-fixtures.js';

const { privateJwk } = await keyPair('platform-1');
const idp = await keyPair('idp-1');
const { dir } = await startTestDirectory('registry', {
  DIRECTORY_SIGNING_JWK: JSON.stringify(privateJwk),
  DIRECTORY_REGISTRATIONS_PER_MINUTE: '20',
  AUTH_JWT_ISSUER: 'https://idp.test',
  AUTH_JWT_AUDIENCE: 'agent-mesh',
  AUTH_JWKS_JSON: JSON.stringify({ keys: [idp.publicJwk] }),
});
const base = dir.url;
const api = client(dir.url);

const ids = (r: Reply) => r.body.items.map((a: { id: string }) => a.id);

test('register → search by skill, tag and ranked text → served card rewritten and signed by the platform', async () => {
  const created = await api(KEYS.acme, 'POST', '/v1/agents', {
    card: card('Invoice Helper', {
      description: 'Answers questions about invoices',
      skills: [
        {
          id: 'invoice-lookup',
          name: 'Look up an invoice',
          description: 'Finds an invoice by number and explains each line',
          tags: ['Billing', 'invoices'],
          examples: ['what is on invoice 1234'],
          inputModes: ['application/pdf'],
        },
      ],
    }),
    channel: { partitions: 2 },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.id, 'invoice-helper', 'id is the slug of the card name');
  assert.equal(created.body.tenant, 'acme');
  assert.equal(created.body.version, 1);
  assert.equal(created.body.visibility, 'tenant', 'default visibility');
  assert.deepEqual(created.body.channel, { keyTemplate: '{tenant}:{agent_id}:{context_id}', partitions: 2 }, 'default key: per context');
  assert.equal(created.body.healthy, false, 'no heartbeat yet');
  // A second agent that mentions invoices only in an example ranks below the first.
  const other = await api(KEYS.acme, 'POST', '/v1/agents', {
    id: 'refund-bot',
    card: card('Refund Bot', {
      skills: [
        {
          id: 'refund',
          name: 'Refund',
          description: 'Refunds paid orders',
          tags: ['billing'],
          examples: ['refund the invoice of order 7'],
        },
      ],
    }),
  });
  assert.equal(other.status, 201, JSON.stringify(other.body));

  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?skill=invoice-lookup')), ['invoice-helper']);
  assert.deepEqual(
    ids(await api(KEYS.acme, 'GET', '/v1/agents?tag=billing')),
    ['invoice-helper', 'refund-bot'],
    'tags match case-insensitively',
  );
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?inputMode=application/pdf')), ['invoice-helper'], 'skill input modes count');
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?outputMode=application/json&skill=refund')), ['refund-bot']);
  const ranked = await api(KEYS.acme, 'GET', '/v1/agents?q=invoice');
  assert.deepEqual(ids(ranked), ['invoice-helper', 'refund-bot'], 'name and description outrank examples');
  assert.ok(ranked.body.items[0].rank > ranked.body.items[1].rank);
  assert.match(ranked.headers.get('server-timing') ?? '', /^search;dur=\d+(\.\d+)?$/);
  assert.deepEqual(
    ids(await api(KEYS.acme, 'GET', '/v1/agents?q=explains%20lines')),
    ['invoice-helper'],
    'skill descriptions are searched (stemmed)',
  );
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?q=nothing-matches-this')), []);

  const served = await api(KEYS.acme, 'GET', '/v1/agents/invoice-helper/card');
  assert.equal(served.status, 200);
  assert.deepEqual(served.body.supportedInterfaces, [
    { url: 'http://dispatcher.test:8080/a2a/invoice-helper', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: 'http://dispatcher.test:8080/a2a/invoice-helper', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    { url: 'http://dispatcher.test:8080/a2a/invoice-helper', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    { url: 'http://dispatcher.test:8080/a2a/invoice-helper', protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
  ]);
  assert.deepEqual(
    served.body.capabilities.extensions.map((e: { uri: string }) => e.uri),
    ['https://agent-mesh.dev/extensions/resumable-streams/v1', 'https://agent-mesh.dev/extensions/delegation/v1'],
    'the served card declares the extensions the dispatcher serves: resumable streams and delegation',
  );
  assert.equal(served.body.signatures.length, 1);
  const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
  assert.equal(jwks.keys[0].kid, 'platform-1');
  assert.equal(jwks.keys[0].d, undefined, 'the JWKS never carries the private key');
  const lookup = async (kid: string): Promise<JWK> => jwks.keys.find((k) => k.kid === kid) ?? {};
  await verifyAgentCardSignature(lookup)(served.body as AgentCard);
  const tampered = { ...served.body, description: `${served.body.description}!` };
  await assert.rejects(verifyAgentCardSignature(lookup)(tampered as AgentCard), /No valid signatures/);
  // The platform signature covers the card's security schemes too (proto oneofs in the SDK's types).
  // Registered by globex: acme's registrations are counted by the rate-limit test below.
  const secured = await api(KEYS.globex, 'POST', '/v1/agents', {
    card: card('Secured Helper', { securitySchemes: { key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } } } }),
  });
  assert.equal(secured.status, 201, JSON.stringify(secured.body));
  const securedCard = await api(KEYS.globex, 'GET', '/v1/agents/secured-helper/card');
  assert.ok(securedCard.body.securitySchemes.key.apiKeySecurityScheme);
  await verifyAgentCardSignature(lookup)(securedCard.body as AgentCard);
});

test('cursor pagination walks every match exactly once, in rank order', async () => {
  for (let i = 0; i < 5; i++) {
    const r = await api(KEYS.acme, 'POST', '/v1/agents', {
      card: card(`Pager ${i}`, { description: `pager agent ${'pager '.repeat(i)}` }),
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  for (const query of ['q=pager', 'tag=refunds']) {
    const seen: string[] = [];
    const ranks: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply = await api(KEYS.acme, 'GET', `/v1/agents?${query}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      assert.ok(page.body.items.length <= 2);
      seen.push(...ids(page));
      ranks.push(...page.body.items.map((a: { rank?: number }) => a.rank ?? 0));
      cursor = page.body.nextCursor;
    } while (cursor);
    assert.equal(new Set(seen).size, seen.length, `${query}: no duplicates`);
    assert.ok(seen.filter((id) => id.startsWith('pager-')).length === 5, `${query}: all pager agents: ${seen}`);
    assert.deepEqual(
      ranks,
      [...ranks].sort((a, b) => b - a),
      'ranks never increase',
    );
  }
  const bad = await api(KEYS.acme, 'GET', '/v1/agents?cursor=garbage');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].field, 'cursor');
});

test('tenant isolation both ways: private and tenant agents are 404 to others; public ones are readable, not writable', async () => {
  const mk = async (key: string, id: string, visibility: string) => {
    const r = await api(key, 'POST', '/v1/agents', { id, card: card(`Iso ${id}`), visibility });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };
  await mk(KEYS.acme, 'acme-private', 'private');
  await mk(KEYS.acme, 'acme-tenant', 'tenant');
  await mk(KEYS.acme, 'acme-public', 'public');
  await mk(KEYS.globex, 'globex-private', 'private');
  await mk(KEYS.globex, 'globex-tenant', 'tenant');

  for (const [viewer, hidden] of [
    [KEYS.globex, ['acme-private', 'acme-tenant']],
    [KEYS.acme, ['globex-private', 'globex-tenant']],
  ] as const) {
    for (const id of hidden) {
      for (const [method, path, body] of [
        ['GET', `/v1/agents/${id}`],
        ['GET', `/v1/agents/${id}/card`],
        ['GET', `/v1/agents/${id}/versions`],
        ['PUT', `/v1/agents/${id}`, { card: card('x') }],
        ['DELETE', `/v1/agents/${id}`],
        ['POST', `/v1/agents/${id}/heartbeat`, {}],
      ] as const) {
        const r = await api(viewer, method, path, body);
        assert.equal(r.status, 404, `${method} ${path} as ${viewer}: ${r.status}`);
        assert.equal(r.body.detail, `no agent "${id}"`, 'indistinguishable from an id that never existed');
      }
    }
    const listed = ids(await api(viewer, 'GET', '/v1/agents?q=iso&limit=100'));
    for (const id of hidden) assert.ok(!listed.includes(id), `${id} not in ${viewer}'s search`);
    assert.ok(listed.includes('acme-public'));
  }
  const never = await api(KEYS.globex, 'GET', '/v1/agents/never-registered');
  assert.equal(never.status, 404);

  // Public: readable by all, changeable only by its tenant.
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/acme-public')).status, 200);
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/acme-public/card')).status, 200);
  assert.equal((await api(KEYS.globex, 'PUT', '/v1/agents/acme-public', { card: card('x') })).status, 403);
  assert.equal((await api(KEYS.globex, 'DELETE', '/v1/agents/acme-public')).status, 403);
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/acme-public')).body.registeredBy, undefined, 'no subject leaks to other tenants');

  // Private = unlisted inside the owning tenant too, unless asked for; still readable by id.
  const own = ids(await api(KEYS.acme, 'GET', '/v1/agents?q=iso&limit=100'));
  assert.ok(own.includes('acme-tenant') && !own.includes('acme-private'));
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?visibility=private&q=iso')), ['acme-private']);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/acme-private')).status, 200);

  // Answers depend on the caller: never kept by a shared cache, never served for another credential.
  for (const path of ['/v1/agents/acme-private/card', '/v1/agents/acme-tenant', '/v1/agents/acme-public/card', '/v1/agents?q=iso']) {
    const r = await api(KEYS.acme, 'GET', path);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('cache-control'), 'private, no-cache', path);
    assert.match(r.headers.get('vary') ?? '', /\bAuthorization\b/i, path);
  }

  // Taking another tenant's id is a conflict that does not say whose it is.
  const taken = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'globex-private', card: card('x') });
  assert.equal(taken.status, 409);
  assert.doesNotMatch(JSON.stringify(taken.body), /globex\b(?!-)/);
});

test('invalid cards and bodies are refused with 400 and a problem body naming each field', async () => {
  const bad = card('Broken', {
    name: '',
    version: undefined,
    capabilities: undefined,
    defaultInputModes: [],
    supportedInterfaces: [{ url: 'not a url', protocolBinding: 'JSONRPC', protocolVersion: 'one' }],
    skills: [
      { id: 's', name: 'S', description: 'd', tags: [] },
      { name: 'no id', description: 'd', tags: ['t'] },
    ],
  });
  const r = await api(KEYS.acme, 'POST', '/v1/agents', {
    card: bad,
    channel: { partitions: 0, colour: 'red', keyTemplate: '{agent_id}' },
    extra: 1,
  });
  assert.equal(r.status, 400);
  assert.match(r.headers.get('content-type') ?? '', /application\/problem\+json/);
  assert.equal(r.body.status, 400);
  assert.equal(r.body.code, 'VALIDATION_FAILED');
  const fields = r.body.errors.map((e: { field: string }) => e.field).sort();
  assert.deepEqual(fields, [
    'card.capabilities',
    'card.defaultInputModes',
    'card.name',
    'card.skills[0].tags',
    'card.skills[1].id',
    'card.supportedInterfaces[0].protocolVersion',
    'card.supportedInterfaces[0].url',
    'card.version',
    'channel.colour',
    'channel.keyTemplate',
    'channel.partitions',
    'extra',
  ]);
  const tmpl = r.body.errors.find((e: { field: string }) => e.field === 'channel.keyTemplate');
  assert.match(tmpl.message, /\{tenant\}/);

  const noCard = await api(KEYS.acme, 'POST', '/v1/agents', {});
  assert.deepEqual(
    noCard.body.errors.map((e: { field: string }) => e.field),
    ['card'],
  );
  const malformed = await api(KEYS.acme, 'POST', '/v1/agents', undefined, '{"card": ');
  assert.equal(malformed.status, 400);
  assert.equal(malformed.body.errors[0].field, 'body');

  const big = await api(KEYS.acme, 'POST', '/v1/agents', { card: card('Big', { description: 'x'.repeat(70 * 1024) }) });
  assert.equal(big.status, 400);
  assert.equal(big.body.code, 'BODY_TOO_LARGE');
  assert.equal(big.body.errors[0].field, 'body');

  const badQuery = await api(KEYS.acme, 'GET', '/v1/agents?limit=1000&colour=red');
  assert.equal(badQuery.status, 400);
  assert.deepEqual(badQuery.body.errors.map((e: { field: string }) => e.field).sort(), ['colour', 'limit']);

  const unauth = await api(undefined, 'GET', '/v1/agents');
  assert.equal(unauth.status, 401);
  assert.equal(unauth.headers.get('www-authenticate'), 'Bearer');
  assert.equal((await api('wrong-key-123', 'GET', '/v1/agents')).status, 401);

  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/broken')).status, 404, 'nothing half-written');
});

test('updates keep every version; retire keeps history and stops new use', async () => {
  const r1 = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'versioned', card: card('Versioned'), channel: { partitions: 2 } });
  assert.equal(r1.status, 201);
  const r2 = await api(KEYS.acme, 'PUT', '/v1/agents/versioned', {
    card: card('Versioned', { version: '2.0.0', description: 'Now also handles chargebacks' }),
    channel: { partitions: 4 },
  });
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.equal(r2.body.version, 2);
  assert.equal(r2.body.channel.partitions, 4);
  const shrink = await api(KEYS.acme, 'PUT', '/v1/agents/versioned', { card: card('Versioned'), channel: { partitions: 1 } });
  assert.equal(shrink.status, 400);
  assert.equal(shrink.body.errors[0].field, 'channel.partitions');

  const versions = await api(KEYS.acme, 'GET', '/v1/agents/versioned/versions');
  assert.deepEqual(
    versions.body.items.map((v: { version: number; card: { version: string } }) => [v.version, v.card.version]),
    [
      [2, '2.0.0'],
      [1, '1.0.0'],
    ],
  );
  assert.equal(
    (await api(KEYS.acme, 'GET', '/v1/agents/versioned/versions/1')).body.card.description,
    'Versioned helps with invoices and refunds',
  );
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?q=chargebacks')), ['versioned'], 'search sees the new version');

  const retired = await api(KEYS.acme, 'DELETE', '/v1/agents/versioned');
  assert.equal(retired.status, 200);
  assert.equal(retired.body.retired, true);
  assert.equal((await api(KEYS.acme, 'DELETE', '/v1/agents/versioned')).status, 200, 'retiring twice is a no-op');
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?q=chargebacks')), [], 'retired agents leave search');
  assert.deepEqual(ids(await api(KEYS.acme, 'GET', '/v1/agents?q=chargebacks&includeRetired=true')), ['versioned']);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/versioned/card')).status, 410);
  assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/versioned', { card: card('Versioned') })).status, 409);
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents/versioned/heartbeat', {})).status, 409);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/versioned/versions')).body.items.length, 2, 'history kept');
  assert.equal(
    (await api(KEYS.acme, 'POST', '/v1/agents', { id: 'versioned', card: card('Versioned') })).status,
    409,
    'ids are not reused',
  );
});

test('a card the directory returns can be sent back as it is: empty scope and scheme maps are left out, and taken so', async () => {
  const secured = card('Round Trip', {
    securitySchemes: { o: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://t.example/token', scopes: {} } } } } },
    securityRequirements: [{ schemes: {} }, { schemes: { o: { list: [] } } }],
    skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'], securityRequirements: [{ schemes: {} }] }],
  });
  const made = await api(KEYS.globex, 'POST', '/v1/agents', { card: secured });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const stored = await api(KEYS.globex, 'GET', '/v1/agents/round-trip');
  const back = await api(KEYS.globex, 'PUT', '/v1/agents/round-trip', { card: stored.body.card });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body.version, 2);
  assert.deepEqual(back.body.card, stored.body.card, 'stored again unchanged');
});

test('registration is rate-limited per tenant with 429 and Retry-After', async () => {
  let limited: Reply | undefined;
  for (let i = 0; i < 25 && !limited; i++) {
    const r = await api(KEYS.initech, 'POST', '/v1/agents', { card: card(`Burst ${i}`) });
    if (r.status === 429) limited = r;
    else assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  assert.ok(limited, 'a burst past the limit is refused');
  assert.equal(limited.body.code, 'RATE_LIMITED');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  // Another tenant is not affected.
  assert.equal((await api(KEYS.globex, 'POST', '/v1/agents', { card: card('Unaffected') })).status, 201);
});

test('a JWT (issuer, audience, expiry checked) authenticates like an API key, tenant from its claim', async () => {
  const jwt = (claims: Record<string, unknown>, aud = 'agent-mesh') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'idp-1' })
      .setIssuer('https://idp.test')
      .setAudience(aud)
      .setSubject('dora')
      .setExpirationTime('5m')
      .sign(idp.privateJwk);
  const token = await jwt({ tenant: 'globex' });
  const r = await api(token, 'POST', '/v1/agents', { id: 'jwt-registered', card: card('Jwt Registered') });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.tenant, 'globex');
  assert.equal(r.body.registeredBy, 'dora');
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/jwt-registered')).status, 200, 'same tenant as the globex API key');
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/jwt-registered')).status, 404);
  assert.equal((await api(await jwt({ tenant: 'globex' }, 'someone-else'), 'GET', '/v1/agents')).status, 401, 'wrong audience');
});
