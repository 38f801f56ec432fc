import { test } from 'node:test';
import assert from 'node:assert/strict';
import { samplesOf } from './prometheus-text.js';

const SCRAPE = `# HELP mesh_events_refused_total Agent events the dispatcher did not believe
# TYPE mesh_events_refused_total counter
mesh_events_refused_total{reason="unsigned"} 3
mesh_events_refused_total{reason="bad-signature"} 1
# HELP mesh_token_exchanges_total Token exchanges
# TYPE mesh_token_exchanges_total counter
mesh_token_exchanges_total{outcome="issued",reason="ok"} 12
mesh_token_exchanges_total{outcome="refused",reason="invalid_grant"} 2 1700000000000
mesh_grants_signed_total 14
mesh_events_refused_total_other{reason="x"} 9
process_cpu_seconds_total 0.52
`;

test('picks only the named families, with labels and values', () => {
  assert.deepEqual(samplesOf(SCRAPE, ['mesh_events_refused_total', 'mesh_token_exchanges_total']), [
    { name: 'mesh_events_refused_total', labels: { reason: 'unsigned' }, value: 3 },
    { name: 'mesh_events_refused_total', labels: { reason: 'bad-signature' }, value: 1 },
    { name: 'mesh_token_exchanges_total', labels: { outcome: 'issued', reason: 'ok' }, value: 12 },
    { name: 'mesh_token_exchanges_total', labels: { outcome: 'refused', reason: 'invalid_grant' }, value: 2 },
  ]);
  assert.deepEqual(samplesOf(SCRAPE, ['mesh_grants_signed_total']), [{ name: 'mesh_grants_signed_total', labels: {}, value: 14 }]);
});

test('label values keep escaped quotes, backslashes and newlines; spacing and a trailing comma are accepted', () => {
  assert.deepEqual(samplesOf('m{a="say \\"hi\\"", b = "c:\\\\d",c="x\\ny",} 1.5e3', ['m']), [
    { name: 'm', labels: { a: 'say "hi"', b: 'c:\\d', c: 'x\ny' }, value: 1500 },
  ]);
  assert.deepEqual(samplesOf('m{} +Inf', ['m']), [{ name: 'm', labels: {}, value: Infinity }]);
});

test('lines that do not parse are skipped, the others kept', () => {
  const text = [
    'm{reason="ok"} 1',
    'm{reason="open} 2',
    'm{reason=unquoted} 3',
    'm{reason="a"} notanumber',
    'm',
    'garbage line',
    'm{reason="b"} 4',
  ].join('\n');
  assert.deepEqual(
    samplesOf(text, ['m']).map((s) => [s.labels.reason, s.value]),
    [
      ['ok', 1],
      ['b', 4],
    ],
  );
  assert.deepEqual(samplesOf('', ['m']), []);
  assert.deepEqual(samplesOf('<html>not metrics</html>', ['m']), []);
});
