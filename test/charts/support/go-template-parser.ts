// Lexer and parser of Go text/template for the chart test's interpreter (go-template.ts executes
// the tree). Trim markers, comments, actions, pipelines with declarations, parenthesised pipelines
// with field chains, and the if/else if/with/range/define/template structure; anything else is a
// parse error rather than a guess.
import { TemplateError, type GoValue } from './go-template-values.js';

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

/** Splits a template into text and actions, applying trim markers. */
export function lex(src: string, name: string): Token[] {
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

export type Operand =
  | { k: 'field'; path: string[] }
  | { k: 'dot' }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'call'; name: string }
  | { k: 'const'; v: GoValue }
  | { k: 'sub'; pipe: Pipeline; path: string[] };
export interface Command {
  args: Operand[];
}
export interface Pipeline {
  decl: string[];
  assign: boolean;
  cmds: Command[];
  where: string;
}
export type Node =
  | { k: 'text'; v: string }
  | { k: 'action'; pipe: Pipeline }
  | { k: 'if' | 'with'; pipe: Pipeline; list: Node[]; else?: Node[] }
  | { k: 'range'; pipe: Pipeline; list: Node[]; else?: Node[] }
  | { k: 'template'; name: string; pipe?: Pipeline; where: string };

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'define', 'template', 'block', 'break', 'continue']);

/** Parses lexed tokens; `define`d templates land in `defines`. */
export class Parser {
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
