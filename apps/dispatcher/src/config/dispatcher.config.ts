import { z } from 'zod';
import { databaseSpec, flag, kafkaSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';

/** Everything the dispatcher reads from the environment, validated at start. */
export const dispatcherConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  DISPATCHER_PORT: port(8080),
  /** Base URL callers reach this dispatcher at; agent cards point their interfaces there. */
  DISPATCHER_PUBLIC_URL: z.string().url().optional(),
  /** Largest request body accepted (body-parser syntax: 512kb, 1mb…). */
  DISPATCHER_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'expected a size like 512kb or 1mb')
    .default('1mb'),
  /** Longest a blocking SendMessage waits before returning the task as it is (callers may ask for less). */
  DISPATCHER_BLOCKING_TIMEOUT_MS: positiveInt(30000),
  /** While waiting, re-read the task this often (covers events consumed by another replica). */
  DISPATCHER_WAIT_POLL_MS: positiveInt(250),
  /** Cache-Control max-age of served agent cards. */
  DISPATCHER_CARD_MAX_AGE_S: z.coerce.number().int().min(0).default(60),
  /** Partitions of the task events topic when the dispatcher has to create it. */
  EVENTS_TOPIC_PARTITIONS: positiveInt(6),
  OUTBOX_BATCH_SIZE: positiveInt(500),
  /** Relay poll interval when idle; an accept wakes it at once. */
  OUTBOX_IDLE_MS: positiveInt(500),
  /** `npm start` demo: register the public `echo-agent` and run a minimal echo worker for it. */
  DEMO: flag(false),
  /** With DEMO: also run the built-in echo worker (turn off once the agents app runs its echo-agent). */
  DEMO_ECHO_WORKER: flag(true),
};

export type DispatcherConfig = ConfigOf<typeof dispatcherConfigSpec>;

/** Reads and validates the dispatcher's environment. */
export function loadDispatcherConfig(env: NodeJS.ProcessEnv = process.env): DispatcherConfig {
  return loadConfig(dispatcherConfigSpec, env);
}
