import { recordBatchBytes } from '@mesh/bus';
import { ChannelKey, encodeEnvelope, type AgentRecord, type Envelope, type TopicNames } from '@mesh/contract';

/** A command on its way to its agent's command topic, as the outbox stores it. */
export interface OutboxCommand {
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
  /** The agent whose channel `topic` is. */
  agentId: string;
}

/**
 * A command larger than its topic accepts: refused where it is built, before anything is stored,
 * so no outbox row ever waits for a send that cannot succeed. Both sizes come with it.
 */
export class CommandTooLargeError extends Error {
  constructor(
    readonly commandBytes: number,
    readonly limitBytes: number,
  ) {
    super(`the command would take ${commandBytes} bytes; its agent's command topic accepts at most ${limitBytes}`);
    this.name = 'CommandTooLargeError';
  }
}

/**
 * Builds every command the dispatcher sends to an agent: the envelope encoded, addressed to the
 * agent's command topic and keyed by its channel-key template, and measured against that topic's
 * limit (`limitOf`, see CommandLimits) the way the broker will measure it.
 */
export class OutboxCommands {
  /** Parsed channel-key templates: a command renders its agent's without parsing it again. */
  private readonly channelKeys = new Map<string | undefined, ChannelKey>();

  constructor(
    private readonly topics: TopicNames,
    private readonly limitOf: (topic: string) => number,
  ) {}

  /** The outbox row of a command; throws {@link CommandTooLargeError} when its topic would refuse it. */
  build(agent: AgentRecord, env: Envelope): OutboxCommand {
    const id = env.identity;
    const key = this.channelKey(agent.channel?.keyTemplate).render({
      tenant: id.tenant,
      agent_id: id.agentId,
      context_id: id.contextId,
      task_id: id.taskId,
    });
    const wire = encodeEnvelope(env);
    const topic = this.topics.commands(agent.id);
    const bytes = recordBatchBytes(key, wire.value, wire.headers);
    const limit = this.limitOf(topic);
    if (bytes > limit) throw new CommandTooLargeError(bytes, limit);
    return { topic, key, headers: wire.headers, value: wire.value.toString('utf8'), agentId: agent.id };
  }

  private channelKey(template: string | undefined): ChannelKey {
    let key = this.channelKeys.get(template);
    if (!key) {
      key = ChannelKey.parse(template);
      // Templates come from agent records: few, but bounded anyway.
      if (this.channelKeys.size >= 1024) this.channelKeys.clear();
      this.channelKeys.set(template, key);
    }
    return key;
  }
}
