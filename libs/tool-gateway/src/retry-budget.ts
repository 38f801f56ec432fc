/** Retries of one task draw from one budget, not one per hop (docs/contract.md §5). */
export class RetryBudget {
  private taken = 0;

  constructor(private remaining: number) {}

  /** Takes one retry; false when the budget is spent. */
  take(): boolean {
    if (this.remaining <= 0) return false;
    this.remaining--;
    this.taken++;
    return true;
  }

  get left(): number {
    return this.remaining;
  }

  /** Retries taken so far (what a task tree's budget is charged for the turn). */
  get used(): number {
    return this.taken;
  }
}
