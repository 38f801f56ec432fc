import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which turns the dispatcher ended itself (`cancel`, `deadline`, `not-started`) rather than their
 * worker: the worker's late artifacts and final report of such a turn are recorded on the task
 * (its state unchanged), so a refund made before the cancel reached it is not hidden.
 */
export class TurnEndedBy1765100000000 implements MigrationInterface {
  name = 'TurnEndedBy1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.executions ADD COLUMN ended_by text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.executions DROP COLUMN ended_by`);
  }
}
