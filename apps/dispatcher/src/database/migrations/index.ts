import type { MigrationInterface } from 'typeorm';
import { CreateTasks1764500000000 } from './1764500000000-create-tasks.js';
import { WorkHashAndDeadline1764600000000 } from './1764600000000-work-hash.js';
import { PushNotifications1764700000000 } from './1764700000000-push.js';
import { PushDeliveryOrder1764810000000 } from './1764810000000-push-order.js';
import { TaskLifecycle1764900000000 } from './1764900000000-task-lifecycle.js';
import { StartBy1765000000000 } from './1765000000000-start-by.js';
import { TurnEndedBy1765100000000 } from './1765100000000-turn-ended-by.js';
import { StatusTimestamp1765200000000 } from './1765200000000-status-timestamp.js';
import { TaskEventLog1765300000000 } from './1765300000000-task-event-log.js';
import { PushWireVersion1765400000000 } from './1765400000000-push-wire-version.js';
import { TaskChildrenUnchecked1765500000000 } from './1765500000000-task-children-unchecked.js';
import { Delegation1765600000000 } from './1765600000000-delegation.js';
import { DedupByTask1765700000000 } from './1765700000000-dedup-by-task.js';
import { WorkingTasks1765810000000 } from './1765810000000-working-tasks.js';
import { Teams1765900000000 } from './1765900000000-teams.js';

/** Postgres schema owned by the dispatcher. */
export const DISPATCHER_SCHEMA = 'dispatcher';

/** Ordered migrations of the dispatcher's schema. */
export const dispatcherMigrations: Array<new () => MigrationInterface> = [
  CreateTasks1764500000000,
  WorkHashAndDeadline1764600000000,
  PushNotifications1764700000000,
  PushDeliveryOrder1764810000000,
  TaskLifecycle1764900000000,
  StartBy1765000000000,
  TurnEndedBy1765100000000,
  StatusTimestamp1765200000000,
  TaskEventLog1765300000000,
  PushWireVersion1765400000000,
  TaskChildrenUnchecked1765500000000,
  Delegation1765600000000,
  DedupByTask1765700000000,
  WorkingTasks1765810000000,
  Teams1765900000000,
];
