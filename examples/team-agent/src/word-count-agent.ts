import { data, defineAgent, textOf } from '@mesh/agent-sdk';

/** Counts the words and characters of a message: a team's agent, written with the SDK only. */
export const wordCountAgent = defineAgent({
  id: 'word-count-agent',
  card: {
    name: 'Word Count Agent',
    description: 'Counts the words and characters of a message.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [{ id: 'word-count', name: 'Count words', description: 'Words and characters of the text parts', tags: ['text'] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json'],
  },
  channel: { visibility: 'private' },
  handler: async (task, ctx) => {
    const text = textOf(task.parts).trim();
    if (!text) return ctx.askForInput('Which text should I count?');
    const words = text.split(/\s+/).length;
    await ctx.artifact({ name: 'count', parts: [data({ words, characters: text.length })] });
    return ctx.complete(`${words} words.`);
  },
});
