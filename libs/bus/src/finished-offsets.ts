/**
 * Offsets finished ABOVE a partition's committed offset, carried in the commit's metadata string
 * (Parallel Consumer's offset map): the committed offset can only be the lowest unfinished record,
 * so without this a new owner re-runs everything that finished above a slow record. Any subset is
 * safe to carry (a record left out is merely run again), which is what makes truncation harmless.
 *
 * Wire form: `mesh-fo1:{commit}:{runs}`, numbers in base 36, each run `{from}` or `{from}-{to}`
 * relative to the commit offset, comma-separated, ascending.
 */
export class FinishedOffsets {
  private cursor = 0;

  private constructor(
    /** Ascending, disjoint, inclusive absolute runs. */
    private readonly runs: ReadonlyArray<readonly [number, number]>,
  ) {}

  /**
   * The metadata for a commit at `commitOffset` of the `finished` offsets above it (any order),
   * at most `maxChars` long (Kafka refuses more than `offset.metadata.max.bytes`, 4096 by default):
   * the lowest runs that fit. Null when there is nothing to carry.
   */
  static encode(commitOffset: number, finished: Iterable<number>, maxChars: number): string | null {
    const sorted = [...finished].filter((o) => o > commitOffset).sort((a, b) => a - b);
    if (sorted.length === 0) return null;
    let out = `${PREFIX}${commitOffset.toString(36)}:`;
    const head = out.length;
    let i = 0;
    while (i < sorted.length) {
      let j = i;
      while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
      const from = (sorted[i] - commitOffset).toString(36);
      const piece = (out.length > head ? ',' : '') + (j > i ? `${from}-${(sorted[j] - commitOffset).toString(36)}` : from);
      if (out.length + piece.length > maxChars) break;
      out += piece;
      i = j + 1;
    }
    return out.length > head ? out : null;
  }

  /**
   * What a commit's metadata says finished, if it was written by {@link encode} for exactly this
   * committed offset; undefined otherwise (no metadata, another writer's, a reset offset).
   */
  static decode(commitOffset: number, metadata: string | null | undefined): FinishedOffsets | undefined {
    if (!metadata?.startsWith(PREFIX)) return undefined;
    const [base, body] = metadata.slice(PREFIX.length).split(':');
    if (body === undefined || parseInt(base, 36) !== commitOffset) return undefined;
    const runs: Array<[number, number]> = [];
    let last = commitOffset;
    for (const piece of body.split(',')) {
      const m = RUN.exec(piece);
      if (!m) return undefined;
      const from = commitOffset + parseInt(m[1], 36);
      const to = m[2] === undefined ? from : commitOffset + parseInt(m[2], 36);
      if (from <= last || to < from) return undefined;
      runs.push([from, to]);
      last = to;
    }
    return new FinishedOffsets(runs);
  }

  /** How many offsets the runs cover. */
  get size(): number {
    return this.runs.reduce((n, [from, to]) => n + to - from + 1, 0);
  }

  /** Whether `offset` finished; ask in ascending order (records arrive so), each call O(1) amortised. */
  has(offset: number): boolean {
    while (this.cursor < this.runs.length && this.runs[this.cursor][1] < offset) this.cursor++;
    const run = this.runs[this.cursor];
    return run !== undefined && run[0] <= offset;
  }
}

const PREFIX = 'mesh-fo1:';
const RUN = /^([0-9a-z]+)(?:-([0-9a-z]+))?$/;
