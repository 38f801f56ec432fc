// A Go text/template interpreter for the chart test: no Helm binary runs here and no npm package
// renders Go templates with the Sprig functions Helm charts use (see docs/charts.md). It follows
// text/template's semantics for what the chart uses — trim markers, comments, pipelines, variables
// with block scope, if/else if/with/range/define/template, truthiness, map ranges in key order,
// field access that fails on nil like Go's — and throws on anything it does not know, so an
// unsupported construct fails the test instead of rendering silently wrong. go-template.spec.ts
// compares it with the real Go engine (compiled to WebAssembly) on the same templates.

/** Go values: int64 is a bigint, float64 a number (Helm parses values into float64), maps are objects. */
export type GoValue = null | undefined | boolean | number | bigint | string | GoValue[] | GoMap;
export interface GoMap {
  [key: string]: GoValue;
}
export type GoFunction = (...args: GoValue[]) => GoValue;

/** A template error with the template name, like Go's `template: name:line: ...`. */
export class TemplateError extends Error {
  override name = 'TemplateError';
}

// ---------------------------------------------------------------- lexing

type Token =
  | { t: 'text'; v: string }
  | { t: 'action'; items: Item[]; line: number; comment?: boolean };

type Item =
  | { k: 'field'; path: string[]; chained: boolean }
  | { k: 'dot' }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'ident'; name: string }
  | { k: 'string'; v: string }
  | { k: 'number'; v: bigint | number }
  | { k: 'bool'; v: boolean }
  | { k: 'nil' }
  | { k: 'lparen' }
  | { k: 'rparen' }
  | { k: 'pipe' }
  | { k: 'declare' }
  | { k: 'assign' }
  | { k: 'comma' };

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const identChar = /[A-Za-z0-9_]/;

function lex(src: string, name: string): Token[] {
  const out: Token[] = [];
  let pos = 0;
  let trimNext = false;
  const lineAt = (p: number) => src.slice(0, p).split('\n').length;
  while (pos < src.length) {
    const open = src.indexOf('{{', pos);
    let text = open < 0 ? src.slice(pos) : src.slice(pos, open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    if (open < 0) {
      if (text) out.push({ t: 'text', v: text });
      break;
    }
    let start = open + 2;
    if (src[start] === '-' && isSpace(src[start + 1])) {
      text = text.replace(/[ \t\r\n]+$/, '');
      start += 1;
    }
    if (text) out.push({ t: 'text', v: text });
    // Find the closing delimiter outside string literals.
    let i = start;
    let close = -1;
    while (i < src.length) {
      const c = src[i];
      if (c === '"') {
        i++;
        while (i < src.length && src[i] !== '"') i += src[i] === '\\' ? 2 : 1;
        i++;
      } else if (c === '`') {
        i = src.indexOf('`', i + 1) + 1;
        if (i === 0) throw new TemplateError(`template: ${name}:${lineAt(open)}: unterminated raw string`);
      } else if (c === '/' && src[i + 1] === '*') {
        const end = src.indexOf('*/', i + 2);
        if (end < 0) throw new TemplateError(`template: ${name}:${lineAt(open)}: unclosed comment`);
        i = end + 2;
      } else if (src.startsWith('}}', i)) {
        close = i;
        break;
      } else i++;
    }
    if (close < 0) throw new TemplateError(`template: ${name}:${lineAt(open)}: unclosed action`);
    let end = close;
    if (src[close - 1] === '-' && isSpace(src[close - 2])) {
      end = close - 1;
      trimNext = true;
    }
    const body = src.slice(start, end);
    const line = lineAt(open);
    if (/^\s*\/\*[\s\S]*\*\/\s*$/.test(body)) out.push({ t: 'action', items: [], line, comment: true });
    else out.push({ t: 'action', items: lexAction(body, `${name}:${line}`), line });
    pos = close + 2;
  }
  return out;
}

function unquote(s: string, where: string): string {
  try {
    return JSON.parse(s) as string;
  } catch {
    throw new TemplateError(`template: ${where}: bad string literal ${s}`);
  }
}

function lexAction(s: string, where: string): Item[] {
  const items: Item[] = [];
  let i = 0;
  const readPath = (): string[] => {
    const path: string[] = [];
    while (s[i] === '.' && identChar.test(s[i + 1] ?? '')) {
      i++;
      let j = i;
      while (j < s.length && identChar.test(s[j])) j++;
      path.push(s.slice(i, j));
      i = j;
    }
    return path;
  };
  while (i < s.length) {
    const c = s[i];
    if (isSpace(c)) i++;
    else if (c === '"') {
      let j = i + 1;
      while (j < s.length && s[j] !== '"') j += s[j] === '\\' ? 2 : 1;
      items.push({ k: 'string', v: unquote(s.slice(i, j + 1), where) });
      i = j + 1;
    } else if (c === '`') {
      const j = s.indexOf('`', i + 1);
      items.push({ k: 'string', v: s.slice(i + 1, j) });
      i = j + 1;
    } else if (c === '(') {
      items.push({ k: 'lparen' });
      i++;
    } else if (c === ')') {
      items.push({ k: 'rparen' });
      i++;
      if (s[i] === '.' && identChar.test(s[i + 1] ?? '')) items.push({ k: 'field', path: readPath(), chained: true });
    } else if (c === '|') {
      items.push({ k: 'pipe' });
      i++;
    } else if (c === ',') {
      items.push({ k: 'comma' });
      i++;
    } else if (c === ':' && s[i + 1] === '=') {
      items.push({ k: 'declare' });
      i += 2;
    } else if (c === '=') {
      items.push({ k: 'assign' });
      i++;
    } else if (c === '.') {
      if (identChar.test(s[i + 1] ?? '') && !/[0-9]/.test(s[i + 1])) items.push({ k: 'field', path: readPath(), chained: false });
      else {
        items.push({ k: 'dot' });
        i++;
      }
    } else if (c === '$') {
      let j = i + 1;
      while (j < s.length && identChar.test(s[j])) j++;
      const name = s.slice(i, j);
      i = j;
      items.push({ k: 'var', name, path: readPath() });
    } else if (/[0-9+-]/.test(c)) {
      const m = /^[+-]?(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?)/.exec(s.slice(i));
      if (!m) throw new TemplateError(`template: ${where}: bad number near ${s.slice(i, i + 10)}`);
      const lit = m[0];
      items.push({ k: 'number', v: /[.eE]/.test(lit) && !lit.includes('0x') ? Number(lit) : BigInt(lit) });
      i += lit.length;
    } else if (identChar.test(c)) {
      let j = i;
      while (j < s.length && identChar.test(s[j])) j++;
      const word = s.slice(i, j);
      i = j;
      if (word === 'true' || word === 'false') items.push({ k: 'bool', v: word === 'true' });
      else if (word === 'nil') items.push({ k: 'nil' });
      else items.push({ k: 'ident', name: word });
    } else throw new TemplateError(`template: ${where}: unexpected "${c}" in action`);
  }
  return items;
}

// ---------------------------------------------------------------- parsing

type Operand =
  | { k: 'field'; path: string[] }
  | { k: 'dot' }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'call'; name: string }
  | { k: 'const'; v: GoValue }
  | { k: 'sub'; pipe: Pipeline; path: string[] };
interface Command {
  args: Operand[];
}
interface Pipeline {
  decl: string[];
  assign: boolean;
  cmds: Command[];
  where: string;
}
type Node =
  | { k: 'text'; v: string }
  | { k: 'action'; pipe: Pipeline }
  | { k: 'if' | 'with'; pipe: Pipeline; list: Node[]; else?: Node[] }
  | { k: 'range'; pipe: Pipeline; list: Node[]; else?: Node[] }
  | { k: 'template'; name: string; pipe?: Pipeline; where: string };

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'define', 'template', 'block', 'break', 'continue']);

class Parser {
  private i = 0;
  constructor(
    private readonly toks: Token[],
    private readonly name: string,
    private readonly defines: Map<string, Node[]>,
  ) {}

  /** Parses to the end; returns the top-level list. */
  parseAll(): Node[] {
    const { list, stop } = this.parseList();
    if (stop) throw new TemplateError(`template: ${this.name}:${stop.line}: unexpected {{${stop.word}}}`);
    return list;
  }

  private parseList(): { list: Node[]; stop?: { word: 'end' | 'else'; line: number; rest: Item[] } } {
    const list: Node[] = [];
    while (this.i < this.toks.length) {
      const tok = this.toks[this.i++];
      if (tok.t === 'text') {
        list.push({ k: 'text', v: tok.v });
        continue;
      }
      if (tok.comment) continue;
      const where = `${this.name}:${tok.line}`;
      const first = tok.items[0];
      const word = first?.k === 'ident' && KEYWORDS.has(first.name) ? first.name : undefined;
      if (!first) throw new TemplateError(`template: ${where}: missing value for command`);
      if (word === 'end' || word === 'else') return { list, stop: { word, line: tok.line, rest: tok.items.slice(1) } };
      if (word === 'if' || word === 'with' || word === 'range') {
        list.push(this.parseControl(word, tok.items.slice(1), where));
      } else if (word === 'define') {
        const nameItem = tok.items[1];
        if (nameItem?.k !== 'string') throw new TemplateError(`template: ${where}: define needs a name`);
        const { list: body, stop } = this.parseList();
        if (stop?.word !== 'end') throw new TemplateError(`template: ${where}: unterminated define`);
        this.defines.set(nameItem.v, body);
      } else if (word === 'template') {
        const nameItem = tok.items[1];
        if (nameItem?.k !== 'string') throw new TemplateError(`template: ${where}: template needs a name`);
        const rest = tok.items.slice(2);
        list.push({ k: 'template', name: nameItem.v, pipe: rest.length ? parsePipeline(rest, where, false) : undefined, where });
      } else if (word) {
        throw new TemplateError(`template: ${where}: {{${word}}} is not supported by this renderer`);
      } else {
        list.push({ k: 'action', pipe: parsePipeline(tok.items, where, false) });
      }
    }
    return { list };
  }

  private parseControl(word: 'if' | 'with' | 'range', items: Item[], where: string): Node {
    const pipe = parsePipeline(items, where, word === 'range');
    const { list, stop } = this.parseList();
    if (!stop) throw new TemplateError(`template: ${where}: unexpected EOF in ${word}`);
    if (stop.word === 'end') return { k: word, pipe, list };
    // {{else}} or {{else if ...}} / {{else with ...}}: the chained form shares one {{end}}.
    const chained = stop.rest[0];
    if (chained?.k === 'ident' && (chained.name === 'if' || chained.name === 'with') && word !== 'range') {
      const inner = this.parseControl(chained.name, stop.rest.slice(1), `${this.name}:${stop.line}`);
      return { k: word, pipe, list, else: [inner] };
    }
    const { list: elseList, stop: end } = this.parseList();
    if (end?.word !== 'end') throw new TemplateError(`template: ${where}: expected {{end}} after {{else}}`);
    return { k: word, pipe, list, else: elseList };
  }
}

function parsePipeline(items: Item[], where: string, allowTwoVars: boolean): Pipeline {
  const decl: string[] = [];
  let assign = false;
  let rest = items;
  // Declarations: `$x :=`, `$x =`, and in range `$i, $v :=`.
  const declIdx = rest.findIndex((it) => it.k === 'declare' || it.k === 'assign');
  if (declIdx > 0 && rest.slice(0, declIdx).every((it) => (it.k === 'var' && it.path.length === 0) || it.k === 'comma')) {
    for (const it of rest.slice(0, declIdx)) if (it.k === 'var') decl.push(it.name);
    if (decl.length > (allowTwoVars ? 2 : 1)) throw new TemplateError(`template: ${where}: too many declarations`);
    assign = rest[declIdx].k === 'assign';
    rest = rest.slice(declIdx + 1);
  }
  let pos = 0;
  const cmds: Command[] = [];
  const parseOperand = (): Operand => {
    const it = rest[pos++];
    let op: Operand;
    switch (it?.k) {
      case 'field':
        op = { k: 'field', path: it.path };
        break;
      case 'dot':
        op = { k: 'dot' };
        break;
      case 'var':
        op = { k: 'var', name: it.name, path: it.path };
        break;
      case 'string':
      case 'number':
      case 'bool':
        op = { k: 'const', v: it.v };
        break;
      case 'nil':
        op = { k: 'const', v: null };
        break;
      case 'ident':
        if (KEYWORDS.has(it.name)) throw new TemplateError(`template: ${where}: unexpected ${it.name}`);
        op = { k: 'call', name: it.name };
        break;
      case 'lparen': {
        let depth = 1;
        const start = pos;
        while (pos < rest.length && depth > 0) {
          const x = rest[pos++];
          if (x.k === 'lparen') depth++;
          if (x.k === 'rparen') depth--;
        }
        if (depth !== 0) throw new TemplateError(`template: ${where}: unclosed left paren`);
        op = { k: 'sub', pipe: parsePipeline(rest.slice(start, pos - 1), where, false), path: [] };
        break;
      }
      default:
        throw new TemplateError(`template: ${where}: unexpected ${it ? it.k : 'end'} in operand`);
    }
    const next = rest[pos];
    if (next?.k === 'field' && next.chained) {
      if (op.k !== 'sub') throw new TemplateError(`template: ${where}: unexpected field chain`);
      op.path = next.path;
      pos++;
    }
    return op;
  };
  while (pos < rest.length) {
    const args: Operand[] = [];
    while (pos < rest.length && rest[pos].k !== 'pipe') {
      if (rest[pos].k === 'rparen') throw new TemplateError(`template: ${where}: unexpected right paren`);
      args.push(parseOperand());
    }
    if (args.length === 0) throw new TemplateError(`template: ${where}: missing command in pipeline`);
    cmds.push({ args });
    pos++; // the pipe
  }
  if (cmds.length === 0) throw new TemplateError(`template: ${where}: missing value for command`);
  return { decl, assign, cmds, where };
}

// ---------------------------------------------------------------- values

/** Go's truth: false, 0, nil, empty string, empty slice or map are false. */
export function truthy(v: GoValue): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  return Object.keys(v).length > 0;
}

export const isMap = (v: GoValue): v is GoMap => typeof v === 'object' && v !== null && !Array.isArray(v);

/** strconv.FormatFloat(f, 'g', -1, 64): what `%v` prints for a float64 (1e+06 for a million). */
export function formatFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expStr] = f.toExponential().split('e');
  const exp = Number(expStr);
  const digits = mant.replace('-', '').replace('.', '');
  let eprec = 6;
  if (eprec > digits.length && digits.length >= exp + 1) eprec = digits.length;
  if (exp < -4 || exp >= eprec) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  return String(f);
}

/** fmt's `%v`. */
export function printValue(v: GoValue): string {
  if (v === null || v === undefined) return '<no value>';
  if (typeof v === 'number') return formatFloat(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `[${v.map(printValue).join(' ')}]`;
  return `map[${Object.keys(v)
    .sort()
    .map((k) => `${k}:${printValue(v[k])}`)
    .join(' ')}]`;
}

function field(v: GoValue, name: string, where: string): GoValue {
  if (isMap(v)) return Object.hasOwn(v, name) ? v[name] : null;
  if (v === null || v === undefined) throw new TemplateError(`template: ${where}: nil pointer evaluating interface {}.${name}`);
  throw new TemplateError(`template: ${where}: can't evaluate field ${name} in type ${kindOf(v)}`);
}

/** reflect.Kind names as Sprig's kindOf reports them. */
export function kindOf(v: GoValue): string {
  if (v === null || v === undefined) return 'invalid';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'bigint') return 'int64';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'slice' : 'map';
}

// ---------------------------------------------------------------- execution

interface Scope {
  vars: { name: string; value: GoValue }[];
}

/** A set of parsed templates (files and their `define`s) sharing one function map. */
export class TemplateSet {
  private readonly trees = new Map<string, Node[]>();
  private readonly funcs: Record<string, GoFunction>;

  constructor(funcs: Record<string, GoFunction>) {
    // include needs the set itself; tpl-style helpers are added by the caller.
    this.funcs = { ...funcs, include: (name, data) => this.execute(String(name), data) };
  }

  /** Parses `src` as template `name`; its `define`s become templates of the set. */
  add(name: string, src: string): void {
    const tree = new Parser(lex(src, name), name, this.trees).parseAll();
    this.trees.set(name, tree);
  }

  has(name: string): boolean {
    return this.trees.has(name);
  }

  /** Executes template `name` with `data` as dot and `$`. */
  execute(name: string, data: GoValue): string {
    const tree = this.trees.get(name);
    if (!tree) throw new TemplateError(`template: no template "${name}" associated with template`);
    const out: string[] = [];
    this.walk(tree, data, { vars: [{ name: '$', value: data }] }, out);
    return out.join('');
  }

  private walk(list: Node[], dot: GoValue, scope: Scope, out: string[]): void {
    for (const node of list) {
      switch (node.k) {
        case 'text':
          out.push(node.v);
          break;
        case 'action': {
          const v = this.evalPipeline(node.pipe, dot, scope);
          if (node.pipe.decl.length === 0) out.push(printValue(v));
          break;
        }
        case 'if':
        case 'with': {
          const mark = scope.vars.length;
          const v = this.evalPipeline(node.pipe, dot, scope);
          if (truthy(v)) this.walk(node.list, node.k === 'with' ? v : dot, scope, out);
          else if (node.else) this.walk(node.else, dot, scope, out);
          scope.vars.length = mark;
          break;
        }
        case 'range': {
          const mark = scope.vars.length;
          const pipe = { ...node.pipe, decl: [] };
          const v = this.evalPipeline(pipe, dot, scope);
          const entries: [GoValue, GoValue][] = Array.isArray(v)
            ? v.map((x, i) => [BigInt(i), x])
            : isMap(v)
              ? Object.keys(v)
                  .sort()
                  .map((k) => [k, v[k]])
              : v === null || v === undefined
                ? []
                : (() => {
                    throw new TemplateError(`template: ${node.pipe.where}: range can't iterate over ${printValue(v)}`);
                  })();
          if (entries.length === 0 && node.else) this.walk(node.else, dot, scope, out);
          for (const [key, elem] of entries) {
            const [a, b] = node.pipe.decl;
            if (b !== undefined) scope.vars.push({ name: a, value: key }, { name: b, value: elem });
            else if (a !== undefined) scope.vars.push({ name: a, value: elem });
            this.walk(node.list, elem, scope, out);
            scope.vars.length = mark;
          }
          break;
        }
        case 'template': {
          const data = node.pipe ? this.evalPipeline(node.pipe, dot, scope) : null;
          out.push(this.execute(node.name, data));
          break;
        }
      }
    }
  }

  private evalPipeline(pipe: Pipeline, dot: GoValue, scope: Scope): GoValue {
    let value: GoValue = undefined;
    let hasFinal = false;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(cmd, dot, scope, hasFinal ? [value] : [], pipe.where);
      hasFinal = true;
    }
    if (pipe.decl.length === 1) {
      const name = pipe.decl[0];
      if (pipe.assign) {
        const slot = [...scope.vars].reverse().find((x) => x.name === name);
        if (!slot) throw new TemplateError(`template: ${pipe.where}: undefined variable: ${name}`);
        slot.value = value;
      } else scope.vars.push({ name, value });
    }
    return value;
  }

  private evalCommand(cmd: Command, dot: GoValue, scope: Scope, final: GoValue[], where: string): GoValue {
    const [head, ...rest] = cmd.args;
    if (head.k === 'call') {
      const fn = this.funcs[head.name];
      if (!fn) throw new TemplateError(`template: ${where}: function "${head.name}" not defined`);
      // and/or short-circuit like Go 1.18+.
      if (head.name === 'and' || head.name === 'or') {
        const args = [...rest.map((a) => () => this.evalOperand(a, dot, scope, where)), ...final.map((f) => () => f)];
        let last: GoValue = null;
        for (const a of args) {
          last = a();
          if (head.name === 'and' ? !truthy(last) : truthy(last)) return last;
        }
        return last;
      }
      const args = [...rest.map((a) => this.evalOperand(a, dot, scope, where)), ...final];
      try {
        return fn(...args);
      } catch (err) {
        if (err instanceof TemplateError) throw err;
        throw new TemplateError(`template: ${where}: error calling ${head.name}: ${(err as Error).message}`);
      }
    }
    if (rest.length > 0 || final.length > 0) throw new TemplateError(`template: ${where}: can't give argument to non-function`);
    return this.evalOperand(head, dot, scope, where);
  }

  private evalOperand(op: Operand, dot: GoValue, scope: Scope, where: string): GoValue {
    switch (op.k) {
      case 'const':
        return op.v;
      case 'dot':
        return dot;
      case 'field':
        return op.path.reduce<GoValue>((v, name) => field(v, name, where), dot);
      case 'var': {
        const slot = [...scope.vars].reverse().find((x) => x.name === op.name);
        if (!slot) throw new TemplateError(`template: ${where}: undefined variable "${op.name}"`);
        return op.path.reduce<GoValue>((v, name) => field(v, name, where), slot.value);
      }
      case 'sub':
        return op.path.reduce<GoValue>((v, name) => field(v, name, where), this.evalPipeline(op.pipe, dot, scope));
      case 'call':
        return this.evalCommand({ args: [op] }, dot, scope, [], where);
    }
  }
}
