/**
 * Longest delay a Node.js timer takes: 2^31-1 ms (about 24.8 days). A longer one fires at once
 * (with a TimeoutOverflowWarning), which would end work "at its deadline" the moment it starts.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A delay any timer can take: negative or NaN → 0, above MAX_TIMER_MS → MAX_TIMER_MS. */
export function clampTimerMs(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(Math.floor(ms), MAX_TIMER_MS);
}

/**
 * Delay of a timer that fires at `deadlineUnixMs`, or undefined when there is none to arm: no
 * deadline, a deadline that is not a finite number, or one further away than MAX_TIMER_MS (no
 * timer yet: nothing runs that long under one lease). A passed deadline gives 0.
 */
export function deadlineTimerMs(deadlineUnixMs: number | undefined, now: number = Date.now()): number | undefined {
  if (deadlineUnixMs === undefined || !Number.isFinite(deadlineUnixMs)) return undefined;
  const ms = deadlineUnixMs - now;
  return ms > MAX_TIMER_MS ? undefined : clampTimerMs(ms);
}
