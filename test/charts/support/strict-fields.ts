// Unknown-field check for rendered objects. The JSON schemas compiled into kubernetes-models accept
// any extra property (Kubernetes' OpenAPI has no additionalProperties: false), while the API server's
// strict field validation rejects them: a misspelt `readinesProbe` would pass `validate()`. The
// packages' type declarations do list every field, so this reads them — interfaces, inline object
// types, arrays, unions and index signatures — and reports any property they do not declare.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';

type TypeExpr =
  | { k: 'object'; members: Map<string, TypeExpr>; index?: TypeExpr }
  | { k: 'array'; of: TypeExpr }
  | { k: 'union'; of: TypeExpr[] }
  | { k: 'ref'; name: string; file: string }
  | { k: 'scalar' };

const SCALARS = new Set(['string', 'number', 'boolean', 'null', 'undefined', 'any', 'unknown', 'object', 'true', 'false']);

function tokenize(src: string): string[] {
  const noComments = src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  return noComments.match(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[A-Za-z_$][A-Za-z0-9_$]*|-?[0-9.]+|[{}<>[\]();:?|,=&.]/g) ?? [];
}

class DeclFile {
  readonly tokens: string[];
  readonly imports = new Map<string, { spec: string; name: string }>();
  constructor(readonly path: string) {
    this.tokens = tokenize(readFileSync(path, 'utf8'));
    const t = this.tokens;
    for (let i = 0; i < t.length; i++) {
      if (t[i] !== 'import' || t[i + 1] !== '{') continue;
      const names: [string, string][] = [];
      let j = i + 2;
      while (t[j] !== '}') {
        if (t[j + 1] === 'as') {
          names.push([t[j + 2], t[j]]);
          j += 3;
        } else {
          names.push([t[j], t[j]]);
          j += 1;
        }
        if (t[j] === ',') j++;
      }
      const spec = t[j + 2].slice(1, -1);
      for (const [local, name] of names) this.imports.set(local, { spec, name });
    }
  }
}

/** Reads type declarations on demand and checks values against them. */
export class StrictFields {
  private readonly files = new Map<string, DeclFile>();
  private readonly decls = new Map<string, TypeExpr>();

  private file(path: string): DeclFile {
    let f = this.files.get(path);
    if (!f) this.files.set(path, (f = new DeclFile(path)));
    return f;
  }

  /** The type declared as `name` (interface, alias or re-export) in or imported by `path`. */
  private resolve(name: string, path: string): TypeExpr {
    const key = `${path}#${name}`;
    const cached = this.decls.get(key);
    if (cached) return cached;
    const f = this.file(path);
    const t = f.tokens;
    let result: TypeExpr | undefined;
    for (let i = 0; i < t.length && !result; i++) {
      if (t[i] === 'interface' && t[i + 1] === name) {
        let j = i + 2;
        while (t[j] !== '{') j++;
        result = this.parseType(f, { i: j }).type;
      } else if (t[i] === 'type' && t[i + 1] === name && t[i + 2] === '=') {
        result = this.parseType(f, { i: i + 3 }).type;
      } else if (t[i] === 'as' && t[i + 1] === name && this.inExport(t, i)) {
        result = this.resolve(t[i - 1], path);
      }
    }
    if (!result) {
      const imp = f.imports.get(name);
      if (imp) {
        const target = imp.spec.startsWith('.')
          ? resolve(dirname(path), `${imp.spec}.d.ts`)
          : createRequire(path)
              .resolve(imp.spec)
              .replace(/\.m?js$/, '.d.ts');
        result = this.resolve(imp.name, target);
      }
    }
    // Types from elsewhere (e.g. TypeMeta from base) are taken as open.
    result ??= { k: 'scalar' };
    this.decls.set(key, result);
    return result;
  }

  /** Whether token i sits in `export { … }` (not in an import's braces). */
  private inExport(t: string[], i: number): boolean {
    let j = i;
    while (j > 0 && t[j] !== '{') j--;
    return t[j - 1] === 'export';
  }

  private parseType(f: DeclFile, pos: { i: number }): { type: TypeExpr } {
    const t = f.tokens;
    const parts: TypeExpr[] = [];
    if (t[pos.i] === '|') pos.i++;
    for (;;) {
      parts.push(this.parsePrimary(f, pos));
      if (t[pos.i] !== '|') break;
      pos.i++;
    }
    return { type: parts.length === 1 ? parts[0] : { k: 'union', of: parts } };
  }

  private parsePrimary(f: DeclFile, pos: { i: number }): TypeExpr {
    const t = f.tokens;
    const tok = t[pos.i++];
    let type: TypeExpr;
    if (tok === 'Array' && t[pos.i] === '<') {
      pos.i++;
      type = { k: 'array', of: this.parseType(f, pos).type };
      pos.i++; // >
    } else if (tok === '{') {
      const members = new Map<string, TypeExpr>();
      let index: TypeExpr | undefined;
      while (t[pos.i] !== '}') {
        if (t[pos.i] === '[') {
          while (t[pos.i] !== ']') pos.i++;
          pos.i += 2; // ] :
          index = this.parseType(f, pos).type;
        } else {
          const name = t[pos.i++].replace(/^["']|["']$/g, '');
          if (t[pos.i] === '?') pos.i++;
          pos.i++; // :
          members.set(name, this.parseType(f, pos).type);
        }
        if (t[pos.i] === ';' || t[pos.i] === ',') pos.i++;
      }
      pos.i++;
      type = { k: 'object', members, index };
    } else if (tok === '(') {
      type = this.parseType(f, pos).type;
      pos.i++;
    } else if (SCALARS.has(tok) || /^["'0-9-]/.test(tok)) {
      type = { k: 'scalar' };
    } else {
      type = { k: 'ref', name: tok, file: f.path };
    }
    while (t[pos.i] === '[' && t[pos.i + 1] === ']') {
      pos.i += 2;
      type = { k: 'array', of: type };
    }
    return type;
  }

  private deref(type: TypeExpr): TypeExpr {
    let t = type;
    while (t.k === 'ref') t = this.resolve(t.name, t.file);
    return t;
  }

  /** Paths of `value`'s properties that the type `name` declared in `declFile` does not have. */
  unknownFields(value: unknown, name: string, declFile: string): string[] {
    const out: string[] = [];
    this.check(value, { k: 'ref', name, file: declFile }, '', out);
    return out;
  }

  private check(value: unknown, type: TypeExpr, path: string, out: string[]): void {
    const t = this.deref(type);
    if (value === null || typeof value !== 'object') return;
    if (t.k === 'array') {
      if (Array.isArray(value)) value.forEach((v, i) => this.check(v, t.of, `${path}[${i}]`, out));
    } else if (t.k === 'union') {
      // Check against the object-like alternatives; the value passes if one accepts it.
      const options = t.of.map((o) => this.deref(o)).filter((o) => o.k === 'object' || o.k === 'array');
      if (options.length === 0) return;
      const attempts = options.map((o) => {
        const errs: string[] = [];
        this.check(value, o, path, errs);
        return errs;
      });
      if (!attempts.some((a) => a.length === 0)) out.push(...attempts[0]);
    } else if (t.k === 'object' && !Array.isArray(value)) {
      for (const [key, v] of Object.entries(value)) {
        const member = t.members.get(key) ?? t.index;
        if (!member) out.push(`${path}.${key}`);
        else this.check(v, member, `${path}.${key}`, out);
      }
    }
  }
}
