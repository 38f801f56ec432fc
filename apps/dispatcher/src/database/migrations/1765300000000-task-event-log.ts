import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The stream events of each task, numbered per task (`seq` 1, 2, … with no gap): the projector,
 * CancelTask, deadlines and follow-up turns append to it in the statement or transaction that
 * changes the task, and bump `tasks.event_seq` with it. Streams are served from it, so every
 * replica hands out the same ids, and a caller resumes after the last id it saw (`Last-Event-ID`).
 * Push deliveries carry the number of the event they notify (`stream_seq`).
 */
export class TaskEventLog1765300000000 implements MigrationInterface {
  name = 'TaskEventLog1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.tasks ADD COLUMN event_seq bigint NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE TABLE dispatcher.task_events (
        task_id text NOT NULL REFERENCES dispatcher.tasks(id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        event jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (task_id, seq)
      )`);
    await q.query(`ALTER TABLE dispatcher.push_deliveries ADD COLUMN stream_seq bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.push_deliveries DROP COLUMN stream_seq`);
    await q.query(`DROP TABLE dispatcher.task_events`);
    await q.query(`ALTER TABLE dispatcher.tasks DROP COLUMN event_seq`);
  }
}
