// The real Helm engine for the chart test: `helm template`, `helm lint` and the release notes, run by
// helm-java (Helm's Go code as a native library, test/charts/helm) in one JVM per test file.
// Helm merges the values, checks them against values.schema.json and renders; this module splits
// the output into objects and names Helm's two kinds of refusal.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { repoRoot } from '../../support/processes.js';

/** The chart declares `kubeVersion: >=1.25`; without a cluster Helm would assume 1.20. */
export const KUBE_VERSION = '1.30.0';

/*
 * helm-java's template returns the release manifest without the hooks (Helm keeps hook objects
 * apart, and `helm template` prints them from there). The chart's hooks are part of what is
 * checked, so templates are rendered from a copy whose hook annotations carry this stand-in key,
 * which no Helm treats as a hook, and the rendered objects get the real key back.
 */
const HOOK = 'helm.sh/hook';
const HOOK_STAND_IN = 'chart-test.invalid/hook';

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
}

/** Values that break values.schema.json: Helm refuses them before rendering. */
export class ValuesSchemaError extends Error {
  override name = 'ValuesSchemaError';
}

/** A template stopped the render (`fail`, `required`): the message is the chart's. */
export class RenderFailure extends Error {
  override name = 'RenderFailure';
}

type Values = Record<string, unknown>;

function refusal(message: string): Error {
  if (/values don't meet the specifications of the schema/.test(message)) return new ValuesSchemaError(message);
  if (/execution error at/.test(message)) return new RenderFailure(message);
  return new Error(message);
}

/** The jars of test/charts/helm/pom.xml, fetched from Maven Central on first use. */
function helmJavaClasspath(): string {
  const libs = join(repoRoot, '.helm-java', 'libs');
  if (!existsSync(libs) || !readdirSync(libs).some((f) => f.startsWith('.complete-'))) {
    const fetched = spawnSync(join(repoRoot, 'scripts', 'helm-java.sh'), ['fetch'], { stdio: 'inherit' });
    if (fetched.status !== 0) throw new Error('scripts/helm-java.sh fetch failed: the chart test needs helm-java from Maven Central');
  }
  return `${libs}/*`;
}

/** A chart directory served by one helm-java process; `close()` ends it. */
export class Chart {
  readonly meta: { name: string; version: string; appVersion: string };
  /** values.yaml as Helm reads it (YAML 1.1). */
  readonly defaults: Values;
  private helm?: ChildProcessWithoutNullStreams;
  private queue: Promise<unknown> = Promise.resolve();
  private buffered = Buffer.alloc(0);
  private waiting?: (answer: { ok: boolean; body: string }) => void;
  private readonly scratch = mkdtempSync(join(tmpdir(), 'chart-test-'));
  private readonly withHooksShown: string;
  private seq = 0;

  constructor(readonly dir: string) {
    this.meta = parse(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as Chart['meta'];
    this.defaults = parse(readFileSync(join(dir, 'values.yaml'), 'utf8'), { version: '1.1' }) as Values;
    this.withHooksShown = join(this.scratch, 'chart');
    cpSync(dir, this.withHooksShown, { recursive: true });
    const templates = join(this.withHooksShown, 'templates');
    for (const f of readdirSync(templates)) {
      const src = readFileSync(join(templates, f), 'utf8');
      writeFileSync(join(templates, f), src.replaceAll(`"${HOOK}`, `"${HOOK_STAND_IN}`));
    }
  }

  /** `helm template` with these values over values.yaml: the objects, hooks included. */
  async render(overrides: Values = {}, opts: RenderOptions = {}): Promise<Manifest[]> {
    const out = (await this.request('template', this.withHooksShown, overrides, opts)).replaceAll(HOOK_STAND_IN, HOOK);
    const manifests: Manifest[] = [];
    for (const part of out.split(/^---[ \t]*$/m)) {
      const source = /^# Source: (.+)$/m.exec(part)?.[1] ?? '?';
      // YAML 1.1 like the API server: an unquoted `on` or `yes` is a boolean there.
      for (const doc of parseAllDocuments(part, { version: '1.1' })) {
        if (doc.errors.length > 0) throw new Error(`${source}: invalid YAML: ${doc.errors[0].message}\n${part}`);
        const obj = doc.toJS() as Manifest | null;
        if (obj !== null && obj !== undefined) manifests.push({ ...obj, source });
      }
    }
    return manifests;
  }

  /** The release notes (NOTES.txt) an install with these values prints. */
  async notes(overrides: Values = {}, opts: RenderOptions = {}): Promise<string> {
    const out = await this.request('notes', this.dir, overrides, opts);
    return out.slice(out.indexOf('NOTES:') + 'NOTES:'.length);
  }

  /** `helm lint --strict`: its messages; rejects when the chart fails. */
  async lint(): Promise<string[]> {
    const out = await this.call(`lint\t${this.dir}`);
    return out.split('\n').filter(Boolean);
  }

  close(): void {
    this.helm?.stdin.end();
    rmSync(this.scratch, { recursive: true, force: true });
  }

  private request(command: string, chartDir: string, overrides: Values, opts: RenderOptions): Promise<string> {
    const file = join(this.scratch, `values-${++this.seq}.json`);
    writeFileSync(file, JSON.stringify(overrides)); // JSON is YAML: Helm reads it as a values file
    return this.call(`${command}\t${chartDir}\t${opts.releaseName ?? 'mesh'}\t${opts.namespace ?? 'default'}\t${file}`);
  }

  /** One request at a time over the process's stdin; answers are `OK|ERR <bytes>\n<body>`. */
  private call(line: string): Promise<string> {
    const next = this.queue.then(
      () =>
        new Promise<string>((resolve, reject) => {
          this.waiting = ({ ok, body }) => (ok ? resolve(body) : reject(refusal(body)));
          this.process().stdin.write(`${line}\n`);
        }),
    );
    this.queue = next.catch(() => undefined);
    return next;
  }

  private process(): ChildProcessWithoutNullStreams {
    if (this.helm) return this.helm;
    const helm = spawn('java', ['-cp', helmJavaClasspath(), join(repoRoot, 'test/charts/helm/HelmChart.java'), KUBE_VERSION]);
    helm.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    helm.stdout.on('data', (d: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, d]);
      const eol = this.buffered.indexOf(10);
      if (eol < 0) return;
      const [status, size] = this.buffered.subarray(0, eol).toString().split(' ');
      const end = eol + 1 + Number(size);
      if (this.buffered.length < end) return;
      const body = this.buffered.subarray(eol + 1, end).toString('utf8');
      this.buffered = this.buffered.subarray(end);
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.({ ok: status === 'OK', body });
    });
    helm.on('exit', (code) => this.waiting?.({ ok: false, body: `helm-java exited with code ${code}` }));
    this.helm = helm;
    return helm;
  }
}
