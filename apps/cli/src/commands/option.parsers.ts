import { InvalidArgumentError } from 'commander';

/** Option parsers shared by the command groups: a bad value is a usage error with this message. */
export const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
};

export const nonNegative = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
};

export const port = (v: string) => {
  const n = nonNegative(v);
  if (n > 65535) throw new InvalidArgumentError('expected a port from 0 to 65535');
  return n;
};
