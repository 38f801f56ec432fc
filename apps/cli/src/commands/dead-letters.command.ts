import type { Command } from 'commander';
import { kafkaOps, type CliContext } from './cli.context.js';
import { positive } from './option.parsers.js';

/** `mesh dead-letters`: the dead-letter topics ({topic}.dlq). */
export function registerDeadLettersCommand(program: Command, { globals: g, kafka, print, progress }: CliContext): void {
  const dl = program.command('dead-letters').description('dead-letter topics ({topic}.dlq)');
  const dlqOf = async (topicOrAgent: string) => (await kafkaOps()).deadLetterTopicOf(g().prefix, topicOrAgent);
  const deadLetterLine = (r: {
    partition: number;
    offset: string;
    errorCode: string | null;
    error: string | null;
    source: string | null;
    attempts: number | null;
  }) => `p${r.partition}@${r.offset}  ${r.errorCode ?? ''}  ${r.error ?? ''}  (from ${r.source ?? '?'}, ${r.attempts ?? '?'} attempts)`;
  dl.command('list <topicOrAgent>')
    .description('records in a dead-letter topic (an agent id means its command topic); replayed ones are marked')
    .option('--limit <n>', 'at most this many', positive, 100)
    .action(async (target: string, o: { limit: number }) => {
      const topic = await dlqOf(target);
      const rows = await (await kafkaOps()).listDeadLetters(kafka(), topic, o.limit);
      print({ topic, deadLetters: rows }, () =>
        rows.length ? rows.map((r) => `${deadLetterLine(r)}${r.replayed ? '  [replayed]' : ''}`) : [`(no dead letters in ${topic})`],
      );
    });
  dl.command('replay <topicOrAgent>')
    .description('send the dead letters present now (and not replayed before) back to their source topic')
    .option('--limit <n>', 'at most this many', positive)
    .option('--timeout <ms>', 'give up waiting after this long', positive, 60000)
    .option('--dry-run', 'list what would be replayed and send nothing')
    .action(async (target: string, o: { limit?: number; timeout: number; dryRun?: boolean }) => {
      const ops = await kafkaOps();
      const topic = await dlqOf(target);
      if (o.dryRun) {
        const plan = await ops.replayPlan(kafka(), topic, o.limit);
        return print({ topic, dryRun: true, wouldReplay: plan }, () => [
          ...plan.map(deadLetterLine),
          `would replay ${plan.length} record(s) from ${topic} (dry run: nothing sent)`,
        ]);
      }
      progress(`replaying ${topic} …`);
      const n = await ops.replay(kafka(), topic, {
        ...(o.limit !== undefined ? { limit: o.limit } : {}),
        timeoutMs: o.timeout,
        onProgress: (sent, total) => progress(`sent ${sent}/${total}`),
      });
      print({ topic, replayed: n }, () => [`replayed ${n} record(s) from ${topic}`]);
    });
}
