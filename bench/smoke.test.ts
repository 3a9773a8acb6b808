import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * The benchmark harness works end to end (`npm run bench -- --quick`, on SQLite, a few seconds
 * per case). Timings are never asserted here; statement counts are, being exact.
 */
describe('npm run bench -- --quick', () => {
  const out = mkdtempSync(join(tmpdir(), 'registry-bench-out-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('measures every case against the baseline and writes JSON, Markdown and an SVG chart', async () => {
    const root = join(__dirname, '..');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'bench/run.ts', '--quick', '--from-source', '--out', out],
      { cwd: root, timeout: 170_000 },
    );
    const files = readdirSync(out).sort();
    expect(files.map((f) => f.replace(/^.*\./, ''))).toEqual(['json', 'md', 'svg']);
    const report = JSON.parse(
      readFileSync(
        join(
          out,
          files.find((f) => f.endsWith('.json'))!,
        ),
        'utf8',
      ),
    ) as {
      results: { name: string; requestsPerSecond: number; p50: number; statementsPerRequest: number; errors: number }[];
      memory: { peakMb: number; settledMb?: number };
    };
    const byName = new Map(report.results.map((r) => [r.name, r]));
    expect([...byName.keys()]).toEqual([
      'baseline GET /trainer/:id',
      'GraphQL trainer(id)',
      'GraphQL trainer(id) by documentId',
      'GraphQL trainer(id), tracing on',
      'REST GET /trainer/:id',
      'REST GET /trainer (list)',
      'baseline nested page 100 × 10 (hand-written)',
      'GraphQL trainers page 100 × creatures 10',
      'GraphQL deep paging (offset MAX_OFFSET-20)',
      'GraphQL deep paging (offset MAX_OFFSET-20), 1 connection',
      'GraphQL first page, 1 connection',
      'GraphQL cursor page at the end, 1 connection',
      'GraphQL nicknameContains, 1 connection',
      'GraphQL createCreature + deleteCreature',
      'GraphQL trainer(id) during 20 concurrent logins',
    ]);
    for (const result of report.results) {
      expect([result.name, result.requestsPerSecond > 0, result.errors]).toEqual([result.name, true, 0]);
    }
    expect(byName.get('GraphQL trainers page 100 × creatures 10')!.statementsPerRequest).toBeLessThanOrEqual(4);
    expect(report.memory.peakMb).toBeGreaterThan(0);
    expect(report.memory.settledMb).toBeGreaterThan(0);
    // At one connection the p50 is each answer's own time, not autocannon's whole milliseconds.
    const oneConnection = report.results.filter((r) => r.name.endsWith('1 connection'));
    expect(oneConnection.map((r) => [r.name, Number.isInteger(r.p50 * 2)])).toEqual(oneConnection.map((r) => [r.name, false]));
    expect(stdout).toContain('x baseline');
    // The targets are read off the run, each with what was measured.
    expect(stdout).toMatch(/(met|NOT met|not measured) +GraphQL trainer\(id\) ≥ 0\.9× baseline: /);
    expect(stdout).toMatch(/(met|NOT met) +nested page 100 × 10 ≥ 0\.6× the hand-written page: [\d.]+× \([\d]+ vs [\d]+ req\/s\)/);
    expect(stdout).toMatch(/met +trainers page 100 × creatures 10 in ≤ 4 SQL statements: [\d.]+/);
    expect(
      readFileSync(
        join(
          out,
          files.find((f) => f.endsWith('.svg'))!,
        ),
        'utf8',
      ),
    ).toMatch(/^<svg [^>]*>/);
  }, 180_000);
});
