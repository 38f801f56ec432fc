import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressPolicy, EgressRefused } from './egress-policy.js';
import { PinnedHttpClient } from './pinned-http.js';

const fakeDns = (table: Record<string, string[]>) => async (host: string) =>
  (table[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
const policy = new EgressPolicy({
  lookup: fakeDns({
    'hooks.example.com': ['93.184.216.34'],
    'internal.example.com': ['10.0.0.5'],
    'mixed.example.com': ['93.184.216.34', '192.168.1.1'],
  }),
});

test('public addresses pass', async () => {
  assert.equal((await policy.check('https://hooks.example.com/a2a')).address, '93.184.216.34');
  assert.equal((await policy.check('https://93.184.216.34/x')).family, 4);
});

test('loopback, private, link-local, metadata, IPv6 loopback, mapped and encoded forms are refused', async () => {
  for (const url of [
    'http://127.0.0.1/',
    'http://localhost./',
    'http://10.1.2.3/',
    'http://172.16.0.1/',
    'http://192.168.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::127.0.0.1]/', // IPv4-compatible (deprecated form)
    'http://[::]/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://0.0.0.0/',
    'http://2130706433/', // decimal 127.0.0.1
    'http://0177.0.0.1/', // octal
    'http://0x7f.1/', // hex
    'http://100.64.0.1/', // carrier-grade NAT
    'http://internal.example.com/', // DNS name resolving to a private address
    'http://mixed.example.com/', // one public, one private answer
  ]) {
    await assert.rejects(policy.check(url), /is not a public address|does not resolve to public addresses only/, url);
  }
});

test('a refused address the caller wrote is named with its range, and an allow-list entry may admit it', async () => {
  for (const [url, range] of [
    ['http://[::1]/', 'loopback'],
    ['http://[::]/', 'unspecified'],
    ['http://[::127.0.0.1]/', 'ipv4Compatible'],
    ['http://127.0.0.1/', 'loopback'],
  ] as const) {
    await assert.rejects(
      policy.check(url),
      (err: unknown) => err instanceof EgressRefused && err.allowListMayAdmit && err.message.includes(`(${range}) is not a public address`),
      url,
    );
  }
});

test('a refused name never says what it resolved to, nor whether it resolved: the detail is for logs only', async () => {
  const answers: Array<[string, string]> = [];
  for (const host of ['internal.example.com', 'mixed.example.com', 'nowhere.example.com']) {
    const err = await policy.check(`https://${host}/hook`).then(
      () => assert.fail(`${host} was allowed`),
      (e: unknown) => e as EgressRefused,
    );
    assert.ok(err instanceof EgressRefused && err.allowListMayAdmit, host);
    assert.equal(err.message, `host ${host} does not resolve to public addresses only`);
    assert.doesNotMatch(err.message, /\d+\.\d+\.\d+\.\d+|private|resolves to/, host);
    answers.push([host, err.detail]);
  }
  assert.match(answers[0][1], /10\.0\.0\.5 \(private\)/, 'operators see the answer');
  assert.match(answers[1][1], /192\.168\.1\.1 \(private\)/);
  assert.match(answers[2][1], /does not resolve/);
});

test('bad schemes, credentials, garbage and unresolvable names are refused with a reason', async () => {
  await assert.rejects(policy.check('file:///etc/passwd'), /scheme file: is not allowed/);
  await assert.rejects(policy.check('gopher://hooks.example.com/'), /scheme/);
  await assert.rejects(policy.check('https://user:pw@hooks.example.com/'), /credentials/);
  await assert.rejects(policy.check('not a url'), /not a valid URL/);
  await assert.rejects(policy.check('https://nowhere.example.com/'), /does not resolve to public addresses only/);
  assert.throws(() => new EgressPolicy({ allowCidrs: ['nope'] }), /invalid CIDR/);
});

test('an allowlisted CIDR permits a private target; redirects are never followed', async () => {
  const server = http.createServer((req, res) => {
    if (req.url === '/redirect') {
      res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c)).on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${body}`));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    await assert.rejects(
      new PinnedHttpClient(new EgressPolicy()).request(`http://127.0.0.1:${port}/`),
      /\(loopback\) is not a public address/,
    );
    const client = new PinnedHttpClient(new EgressPolicy({ allowCidrs: ['127.0.0.0/8'] }));
    const res = await client.request(`http://127.0.0.1:${port}/hook`, { body: 'x' });
    assert.deepEqual([res.status, res.body], [200, 'got x']);
    await assert.rejects(client.request(`http://127.0.0.1:${port}/redirect`), /redirect \(302\) not followed/);
  } finally {
    server.close();
  }
});
