// The chart test trusts its Go template interpreter only as far as this spec proves it: each case
// runs through the real Go text/template (compiled to WebAssembly, @evertdespiegeleer/go-template)
// and through ours, and the outputs must match. Sprig functions (absent from the Go build) are
// checked against the outputs Sprig documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as goRender } from '@evertdespiegeleer/go-template';
import { TemplateSet, TemplateError, type GoMap } from './support/go-template.js';
import { RenderFailure, sprigFunctions } from './support/sprig.js';

const data = {
  name: 'mesh',
  count: 12,
  big: 1000000,
  ratio: 0.25,
  flag: false,
  empty: '',
  none: [],
  list: ['a', 'b', 'c'],
  nested: { z: 1, a: { deep: 'yes' }, m: [1, 2] },
  groups: [
    { name: 'refund', ids: ['refund-agent'], partitions: 12 },
    { name: 'echo', ids: ['echo-agent', 'x'], partitions: 6 },
  ],
};

const cases: Record<string, string> = {
  'fields and nested fields': '{{ .name }}/{{ .nested.a.deep }}/{{ .count }}',
  'float64 printing (%v)': '{{ .big }} {{ .ratio }} {{ .count }} {{ 3 }} {{ 2.5 }}',
  'trim markers': 'a  {{- .name -}}  b\n  {{- " c" }}\n{{ .name }}  \n  {{- /* a comment */ -}}\n  end',
  'if / else if / else': '{{ if .flag }}A{{ else if .empty }}B{{ else if .list }}C{{ else }}D{{ end }}',
  'with / else and dot': '{{ with .nested.a }}{{ .deep }}{{ end }}|{{ with .empty }}x{{ else }}none{{ end }}',
  'range over a list with index': '{{ range $i, $v := .list }}{{ $i }}:{{ $v }},{{ end }}',
  'range over a map in key order': '{{ range $k, $v := .nested }}{{ $k }}={{ $v }};{{ end }}',
  'range else on empty': '{{ range .none }}x{{ else }}nothing{{ end }}',
  'variables: $ inside range, block scope, reassignment':
    '{{ $x := "outer" }}{{ range .groups }}{{ $.name }}-{{ .name }}:{{ len .ids }} {{ $x = .name }}{{ end }}{{ $x }}',
  'define and template': '{{ define "t" }}[{{ .name }}]{{ end }}{{ template "t" . }}{{ template "t" (index .groups 1) }}',
  'pipelines and parenthesized chains': '{{ (index .groups 1).name }} {{ index .list 2 | printf "%s!" }} {{ (index .nested "a").deep }}',
  'and/or/not/eq/lt with short-circuit': '{{ and .name .count }} {{ or .empty .flag "z" }} {{ not .list }} {{ eq .name "mesh" "x" }} {{ lt 1 2 }} {{ or .name .missing.field }}',
  'helper-style define with trim markers, called in the middle of a block':
    '{{- define "labels" -}}\na: {{ .name }}\nb: {{ len .list }}\n{{- end -}}\nobj:\n  {{- template "labels" . }}\n  {{- range $g := .groups }}\n  - {{ $g.name }}\n  {{- end }}\nend\n',
  'variables assigned in a nested block and shadowed': '{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $x := 3 }}{{ $x }}{{ end }}{{ $x }}{{ with .nested }}{{ $x }}{{ end }}',
  'printf and print': '{{ printf "%s-%s %q %v" .name "b" "q" .count }} {{ print 1 2 "a" 3 }}',
};

for (const [name, tpl] of Object.entries(cases)) {
  test(`matches Go text/template: ${name}`, async () => {
    const expected = await goRender(tpl, data);
    const set = new TemplateSet(sprigFunctions);
    set.add('tpl', tpl);
    assert.equal(set.execute('tpl', structuredClone(data) as GoMap), expected);
  });
}

test('errors like Go: nil pointer field access, unknown function, unterminated block', async () => {
  const render = (tpl: string) => {
    const set = new TemplateSet(sprigFunctions);
    set.add('tpl', tpl);
    return set.execute('tpl', structuredClone(data) as GoMap);
  };
  await assert.rejects(goRender('{{ .nested.nope.deeper }}', data));
  assert.throws(() => render('{{ .nested.nope.deeper }}'), /nil pointer evaluating interface \{\}\.deeper/);
  assert.throws(() => render('{{ frobnicate 1 }}'), /function "frobnicate" not defined/);
  assert.throws(() => render('{{ if .name }}x'), /unexpected EOF/);
  assert.throws(() => render('{{ gt .count 1 }}'), /incompatible types for comparison/);
  assert.throws(() => render('{{ printf "%d" .count }}'), TemplateError);
});

test('Sprig and Helm functions behave as documented', () => {
  const render = (tpl: string, d: unknown = data) => {
    const set = new TemplateSet(sprigFunctions);
    set.add('tpl', tpl);
    return set.execute('tpl', structuredClone(d) as GoMap);
  };
  assert.equal(render('{{ .empty | default "fallback" }} {{ .name | default "x" }} {{ 0 | default 7 }}'), 'fallback mesh 7');
  assert.equal(render('{{ "a-very-long-name-" | trunc 6 | trimSuffix "-" }}'), 'a-very');
  assert.equal(render('{{ .count | quote }} {{ .big | quote }} {{ .big | int }} {{ "8" | int }}'), '"12" "1e+06" 1000000 8');
  assert.equal(render('{{ min 12 20 }} {{ min (int .count) 6 }} {{ max 1 0 }} {{ add 5 30 15 }} {{ mul (int .count) 1000 }}'), '12 6 1 50 12000');
  assert.equal(render('x:{{ toYaml .nested | nindent 2 }}'), 'x:\n  a:\n    deep: "yes"\n  m:\n    - 1\n    - 2\n  z: 1');
  assert.equal(render('{{ toYaml .list | indent 2 }}'), '  - a\n  - b\n  - c');
  assert.equal(render('{{ join "," .list }} {{ upper "abc" }} {{ replace "+" "_" "1+2" }} {{ contains "es" .name }}'), 'a,b,c ABC 1_2 true');
  assert.equal(render('{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ hasKey $d "b" }} {{ kindIs "invalid" .missing }} {{ kindIs "map" $d }}'), 'true true true');
  assert.equal(render('{{ $l := list 1 }}{{ $l = append $l 2 }}{{ len $l }} {{ "hi" | b64enc }}'), '2 aGk=');
  assert.throws(() => render('{{ required "name is required" .empty }}'), (e: Error) => e instanceof RenderFailure && e.message === 'name is required');
  assert.throws(() => render('{{ fail "stop here" }}'), /stop here/);
});
