// `helm template` for the chart test: merges values like Helm (user values over values.yaml, maps
// deep-merged, null deletes a key), validates them against values.schema.json with ajv (Helm does
// the same before rendering), renders every file under templates/ with the Go template interpreter,
// and splits the output into YAML documents.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { isMap, TemplateSet, type GoMap, type GoValue } from './go-template.js';
import { sprigFunctions } from './sprig.js';

/** A rendered Kubernetes object and the template file it came from. */
export interface Manifest {
  source: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  releaseName?: string;
  namespace?: string;
  isUpgrade?: boolean;
}

/** Values rejected by values.schema.json; `errors` lists ajv's findings. */
export class ValuesSchemaError extends Error {
  override name = 'ValuesSchemaError';
  constructor(readonly errors: ErrorObject[]) {
    super(`values don't meet the specifications of the schema: ${errors.map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`);
  }
}

/** Helm's coalesce: `over` wins, maps merge recursively, a null in `over` removes the key. */
export function mergeValues(base: GoValue, over: GoValue): GoValue {
  if (!isMap(base) || !isMap(over)) return over === undefined ? base : over;
  const out: GoMap = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else out[k] = isMap(out[k]) && isMap(v) ? mergeValues(out[k], v) : v;
  }
  return out;
}

const clone = <T>(v: T): T => structuredClone(v);

/** A chart directory loaded once: Chart.yaml, values.yaml, values.schema.json and the templates. */
export class Chart {
  readonly meta: { name: string; version: string; appVersion: string };
  readonly defaults: GoMap;
  readonly schema: object;
  private readonly files: { name: string; src: string }[];
  private readonly validate;

  constructor(readonly dir: string) {
    const meta = parse(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as { name: string; version: string; appVersion: string };
    this.meta = meta;
    this.defaults = parse(readFileSync(join(dir, 'values.yaml'), 'utf8'), { version: '1.1' }) as GoMap;
    this.schema = JSON.parse(readFileSync(join(dir, 'values.schema.json'), 'utf8')) as object;
    this.validate = new Ajv({ allErrors: true, strict: false }).compile(this.schema);
    this.files = readdirSync(join(dir, 'templates'))
      .sort()
      .map((f) => ({ name: `${meta.name}/templates/${f}`, src: readFileSync(join(dir, 'templates', f), 'utf8') }));
  }

  /** The merged values, or ValuesSchemaError when they break values.schema.json. */
  values(overrides: GoMap = {}): GoMap {
    const merged = mergeValues(clone(this.defaults), clone(overrides)) as GoMap;
    if (!this.validate(merged)) throw new ValuesSchemaError(this.validate.errors ?? []);
    return merged;
  }

  /** Renders every template; returns the objects (hooks included) and NOTES.txt. */
  render(overrides: GoMap = {}, opts: RenderOptions = {}): { manifests: Manifest[]; notes: string } {
    const values = this.values(overrides);
    const set = new TemplateSet(sprigFunctions);
    for (const f of this.files) set.add(f.name, f.src);
    const top: GoMap = {
      Values: values,
      Release: {
        Name: opts.releaseName ?? 'mesh',
        Namespace: opts.namespace ?? 'default',
        Service: 'Helm',
        IsInstall: !opts.isUpgrade,
        IsUpgrade: !!opts.isUpgrade,
        Revision: 1n,
      },
      Chart: { Name: this.meta.name, Version: this.meta.version, AppVersion: this.meta.appVersion },
      Template: { BasePath: `${this.meta.name}/templates` },
    };
    const manifests: Manifest[] = [];
    let notes = '';
    for (const f of this.files) {
      const base = f.name.split('/').pop()!;
      if (base.startsWith('_')) continue;
      const out = set.execute(f.name, { ...top, Template: { ...(top.Template as GoMap), Name: f.name } }).replaceAll('<no value>', '');
      if (base === 'NOTES.txt') {
        notes = out;
        continue;
      }
      // Helm splits a file's output on lines that are `---`.
      for (const part of out.split(/(?:^|\n)---[ \t]*(?=\n|$)/)) {
        // YAML 1.1 like Helm and the API server: an unquoted `on` or `yes` is a boolean there.
        const docs = parseAllDocuments(part, { version: '1.1' });
        for (const doc of docs) {
          if (doc.errors.length > 0) throw new Error(`${f.name}: invalid YAML: ${doc.errors[0].message}\n${part}`);
          const obj = doc.toJS() as Manifest | null;
          if (obj === null || obj === undefined) continue;
          manifests.push({ ...obj, source: f.name });
        }
      }
    }
    return { manifests, notes };
  }
}
