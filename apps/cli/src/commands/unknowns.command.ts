import { Option, type Command } from 'commander';
// Types only: `mesh --help` must not load @mesh/contract (zod) — see RESOLUTIONS for its one value.
import type { OpsResolved, OpsUnknowns, UnknownResolution } from '@mesh/contract';
import type { CliContext } from './cli.context.js';

/** Every resolution of the ops API with its meaning: a Record, so the compiler flags one missing or extra. */
const RESOLUTIONS: Record<UnknownResolution, string> = {
  ok: 'it happened',
  error: 'it failed',
  absent: 'it never happened',
};

/** `mesh unknowns`: side-effecting tool calls whose outcome is unknown. */
export function registerUnknownsCommand(program: Command, { ops, print }: CliContext): void {
  const unk = program.command('unknowns').description('side-effecting tool calls whose outcome is unknown');
  unk
    .command('list')
    .description('open unknown outcomes, oldest first')
    .action(async () => {
      const r = await ops<OpsUnknowns>('/unknowns');
      print(r, () =>
        r.unknowns.length
          ? r.unknowns.map((u) => `${u.key}  ${u.tool}  task ${u.taskId} (${u.tenant})  ${u.reason ?? ''}`)
          : ['(no unknown outcomes)'],
      );
    });
  unk
    .command('resolve <key>')
    .description('settle one by hand after checking the target system')
    .addOption(
      new Option(
        '--state <state>',
        Object.entries(RESOLUTIONS)
          .map(([state, meaning]) => `${state}: ${meaning}`)
          .join('; '),
      )
        .choices(Object.keys(RESOLUTIONS))
        .makeOptionMandatory(),
    )
    .option('--text <text>', 'the result text the agent will see')
    .action(async (key: string, o: { state: string; text?: string }) => {
      const r = await ops<OpsResolved>(`/unknowns/${encodeURIComponent(key)}/resolve`, {
        method: 'POST',
        body: { state: o.state, ...(o.text ? { text: o.text } : {}) },
      });
      print(r, () => [`resolved ${r.key} as ${r.state}`]);
    });
}
