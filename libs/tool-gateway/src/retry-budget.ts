/** Retries of one task draw from one budget, not one per hop (docs/contract.md §5). */
export class RetryBudget {
  constructor(private remaining: number) {}

  /** Takes one retry; false when the budget is spent. */
  take(): boolean {
    if (this.remaining <= 0) return false;
    this.remaining--;
    return true;
  }

  get left(): number {
    return this.remaining;
  }
}
