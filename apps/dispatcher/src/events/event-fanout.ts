import type { Consumer, Kafka } from 'kafkajs';
import { AgentEvent } from '@a2a-js/sdk/server';
import { Artifact, TaskStatus } from '@a2a-js/sdk';
import { decodeEnvelope, newId, type TaskEvent } from '@mesh/contract';
import type { TaskEventBusManager } from './task-event-bus.manager.js';
import { IntervalCommitter } from '@mesh/bus';

const log = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level, src: 'event-fanout', msg, ...extra })}\n`);

/**
 * Every replica reads the whole events topic under a consumer group of its own (a fresh id per
 * process, starting at the end of the topic, deleted on stop) and hands each event to the local
 * buses, so a stream can be served by any replica whichever one accepted the task or projects
 * its events. Nothing here writes: the projector (one shared group) stays the only writer.
 */
export class EventFanout {
  private consumer?: Consumer;
  private committer?: IntervalCommitter;
  private readonly groupId: string;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    groupPrefix: string,
    private readonly buses: TaskEventBusManager,
  ) {
    this.groupId = `${groupPrefix}.${newId()}`;
  }

  /** Resolves once the group has joined, so subscribers attached afterwards miss nothing new. */
  async start(): Promise<void> {
    const consumer = this.kafka.consumer({ groupId: this.groupId, maxWaitTimeInMs: 50, sessionTimeout: 10000, heartbeatInterval: 1000 });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: false });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    // Commits (every 5 s, not per fetched batch) let a consumer that rejoins after a broker outage
    // resume where it was instead of at the end of the topic.
    const committer = new IntervalCommitter(consumer, 5000);
    this.committer = committer;
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        committer.processed(topic, partition, message.offset);
        // Events are keyed by task id (the contract): most are of tasks nobody here follows.
        if (message.key && !this.buses.isFollowed(message.key.toString())) return;
        let env;
        try {
          env = decodeEnvelope({ headers: message.headers, value: message.value });
        } catch (err) {
          log('warn', 'undecodable event skipped', { err: String(err) });
          return;
        }
        if (env.kind !== 'task.status' && env.kind !== 'task.artifact') return;
        const event = toAgentEvent(env);
        if (event) this.buses.publishRaw(env.identity.taskId, event, env);
      },
    });
    await joined;
  }

  async stop(): Promise<void> {
    if (!this.consumer) return;
    await this.committer?.stop();
    await this.consumer.disconnect().catch(() => undefined);
    // The group is this process's alone: leave nothing behind on the broker.
    const admin = this.kafka.admin();
    await admin
      .connect()
      .then(() => admin.deleteGroups([this.groupId]))
      .catch(() => undefined)
      .finally(() => admin.disconnect().catch(() => undefined));
  }
}

/** A worker event as the A2A stream event it becomes (before projection). */
export function toAgentEvent(env: TaskEvent) {
  const taskId = env.identity.taskId;
  const contextId = env.identity.contextId;
  if (env.kind === 'task.status') {
    const status = TaskStatus.fromJSON({
      state: env.body.state,
      timestamp: new Date().toISOString(),
      ...(env.body.message ? { message: { ...env.body.message, taskId, contextId } } : {}),
    });
    return AgentEvent.statusUpdate({ taskId, contextId, status, metadata: undefined });
  }
  return AgentEvent.artifactUpdate({
    taskId,
    contextId,
    artifact: Artifact.fromJSON(env.body.artifact),
    append: env.body.append ?? false,
    lastChunk: env.body.lastChunk ?? false,
    metadata: undefined,
  });
}
