// `speaker-agent doctor`: runs every check (src/cli/doctor.ts) and prints pass/fail with the fix for each
// failure. Exit code: 0 when nothing failed, else the code of the first failure's kind (config 3, auth 4,
// network 5, audio 6, other 1).
import type { Command } from 'commander';
import { EXIT_CODES } from '../../agent/errors.js';
import type { CheckResult, DoctorReport } from '../doctor.js';
import { emit, table } from '../output.js';

const MARK: Record<CheckResult['status'], string> = { pass: 'ok', warn: 'WARN', fail: 'FAIL', skip: 'skip' };

export function doctorExitCode(r: DoctorReport): number {
  const failed = r.checks.find((c) => c.status === 'fail');
  if (!failed) return EXIT_CODES.ok;
  return failed.category && failed.category !== 'other' ? EXIT_CODES[failed.category] : EXIT_CODES.other;
}

function human(r: DoctorReport): string {
  const rows = r.checks.map((c) => [c.name, MARK[c.status], c.detail]);
  const fixes = r.checks.filter((c) => (c.status === 'fail' || c.status === 'warn') && c.fix).map((c) => `  ${c.name}: ${c.fix}`);
  const failed = r.checks.filter((c) => c.status === 'fail').length;
  return [
    table(['check', 'result', 'detail'], rows),
    ...(fixes.length ? ['', 'How to fix:', ...fixes] : []),
    '',
    failed ? `${failed} check${failed > 1 ? 's' : ''} failed (${(r.ms / 1000).toFixed(1)} s)` : `all checks passed (${(r.ms / 1000).toFixed(1)} s)`,
  ].join('\n');
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check config, identity, Node and native addons, sound card, echo path, mixer, server, TOFU state, a realtime call, clock')
    .option('--json', 'print JSON {ok, checks: [{name, status, detail, fix}]}')
    .option('--skip-call', 'do not place the short test call')
    // PROBE_MS in echoCheck.ts (not imported: this module loads with every command); the help's test compares them
    .option('--skip-echo', 'do not play the 2.5 s noise probe that measures the echo path (played twice when the speaker underran during the first)')
    .addHelpText('after', '\nExamples:\n  sudo speaker-agent doctor\n  speaker-agent doctor --json | jq \'.checks[] | select(.status == "fail")\'')
    .action(async (o: { json?: boolean; skipCall?: boolean; skipEcho?: boolean }) => {
      const { runDoctor } = await import('../doctor.js'); // WebRTC and the audio addon: loaded only here
      const report = await runDoctor({ skipCall: o.skipCall, skipEcho: o.skipEcho });
      emit(o, report, human);
      process.exitCode = doctorExitCode(report);
    });
}
