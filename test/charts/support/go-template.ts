// A Go text/template interpreter for the chart test: no Helm binary runs here and no npm package
// renders Go templates with the Sprig functions Helm charts use (see docs/charts.md). It follows
// text/template's semantics for what the chart uses — trim markers, comments, pipelines, variables
// with block scope, if/else if/with/range/define/template, truthiness, map ranges in key order,
// field access that fails on nil like Go's — and throws on anything it does not know, so an
// unsupported construct fails the test instead of rendering silently wrong. go-template.spec.ts
// compares it with the real Go engine (compiled to WebAssembly) on the same templates.

import { lex, Parser, type Command, type Node, type Operand, type Pipeline } from './go-template-parser.js';
import { field, isMap, printValue, TemplateError, truthy, type GoFunction, type GoValue } from './go-template-values.js';

export * from './go-template-values.js';

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
