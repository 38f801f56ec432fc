import { Injectable, type PipeTransform } from '@nestjs/common';
import { isAgentId } from '@mesh/contract';
import { DirectoryError } from './directory.exception.js';

/**
 * `:id` route parameters: a string that cannot be an agent id (a NUL byte, 300 characters, upper
 * case) names no agent, so it is the same 404 as an unknown id, answered before any query (Postgres
 * refuses NUL bytes in text, which would otherwise surface as a 500).
 */
@Injectable()
export class AgentIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isAgentId(value)) throw DirectoryError.notFound(value.slice(0, 64));
    return value;
  }
}
