import { Injectable, type PipeTransform } from '@nestjs/common';
import { DirectoryError } from './directory.exception.js';

/** Largest card version: the column is a Postgres `integer`. */
export const MAX_VERSION = 2_147_483_647;

/**
 * `:version` route parameters: a decimal integer from 1 to 2^31-1, else 400 naming `version`
 * (a larger one was a Postgres "out of range" 500).
 */
@Injectable()
export class VersionNumberPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    const n = /^[0-9]{1,10}$/.test(value) ? Number(value) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_VERSION) {
      throw new DirectoryError('VALIDATION_FAILED', 'invalid version', [
        { field: 'version', message: `expected an integer from 1 to ${MAX_VERSION}` },
      ]);
    }
    return n;
  }
}
