import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.status_timestamp` equals the `status.timestamp` each task shows (the projector used to
 * store its commit time there instead), so ListTasks, ordered and paged on the column, comes back
 * in the order of the timestamps it returns. Backfills rows written before: the column takes the
 * task's own status timestamp wherever that is a well-formed ISO time.
 */
export class StatusTimestamp1765200000000 implements MigrationInterface {
  name = 'StatusTimestamp1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE dispatcher.tasks SET status_timestamp = (task->'status'->>'timestamp')::timestamptz
        WHERE task->'status'->>'timestamp' ~ '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?(Z|[+-]\\d{2}:\\d{2})$'
          AND status_timestamp IS DISTINCT FROM (task->'status'->>'timestamp')::timestamptz`,
    );
  }

  async down(): Promise<void> {
    // Nothing to undo: the column keeps a valid time either way.
  }
}
