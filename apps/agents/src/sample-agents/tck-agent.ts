import { defineAgent, textOf, type AgentTask } from '@mesh/agent-sdk';

/**
 * How long a turn stays WORKING for the message-id patterns the A2A TCK uses to watch a live task
 * (its SUT requirements: a resubscribe task must stay active ≥ 2 × TCK_STREAMING_TIMEOUT, 2 s by
 * default; its ListTasks helper waits for WORKING), in ms.
 */
export const TCK_HOLDS: ReadonlyArray<{ prefix: string; ms: number }> = [
  { prefix: 'test-subscribe-message-id', ms: 8_000 },
  { prefix: 'test-resubscribe-message-id', ms: 8_000 },
  { prefix: 'list-test-message-id', ms: 60_000 },
];

/** The hold of a turn, by its message id (0: none). */
export function holdOf(messageId: string | undefined): number {
  return TCK_HOLDS.find((h) => messageId?.startsWith(h.prefix))?.ms ?? 0;
}

/** Waits `ms`, or until the turn is canceled (or its deadline passes). */
function hold(task: AgentTask, ms: number): Promise<void> {
  if (ms <= 0 || task.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      task.signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    task.signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The agent the official A2A TCK (a2aproject/a2a-tck) is run against (`npm run conformance`,
 * docs/proof.md). Like the TCK's reference SUT it keeps its tasks open: every turn reports
 * WORKING, answers with an artifact echoing the message, and ends INPUT_REQUIRED, so a message
 * carrying the task's id continues it and CancelTask finds it live. Messages whose id starts with
 * a pattern of TCK_HOLDS stay WORKING that long first (a cancel ends the wait at once).
 */
export const tckAgent = defineAgent({
  id: 'tck-agent',
  card: {
    name: 'TCK Agent',
    description: 'Keeps every task open for continuation: echoes each message and asks for the next one.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [
      {
        id: 'tck-echo',
        name: 'Echo and wait',
        description: 'Echoes the message as an artifact, then waits for the next message of the task',
        tags: ['tck', 'test'],
        examples: ['hello'],
      },
    ],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    // Every call but the card needs a bearer token (an API key or a JWT) at the dispatcher.
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'A mesh API key or JWT' } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
  },
  channel: { visibility: 'public', maxInFlight: 256 },
  handler: async (task, ctx) => {
    await ctx.progress('Working on it.');
    await hold(task, holdOf(task.message.messageId));
    if (task.signal.aborted) return ctx.fail('stopped before the answer');
    const said = textOf(task.parts);
    await ctx.artifact({
      name: 'response',
      parts: [{ type: 'text', text: said ? `You said: ${said}` : 'Received your message.' }],
    });
    return ctx.askForInput('Send another message to continue this task, or cancel it.');
  },
});
