// Turns benchmark results into a console table, a Markdown page and an SVG chart.

export interface CaseResult {
  name: string;
  round: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Mean latency in ms (autocannon's, to the hundredth: p50 is whole or half milliseconds). */
  mean?: number;
  errors: number;
  /** SQL statements the service sent per request, from its db_statements_total counter. */
  statementsPerRequest: number;
  /**
   * CPU time (ms, user and system) per request of the process that answered (the service, or the
   * hand-written baseline) and of the database server when it runs on this machine, from /proc;
   * absent where /proc could not tell, and in reports made before.
   */
  serverCpuMs?: number;
  databaseCpuMs?: number;
  note?: string;
}

export interface Report {
  when: string;
  mode: string;
  machine: string;
  options: Record<string, unknown>;
  seedSeconds: number | null;
  results: CaseResult[];
  /** RSS after each soak run, with that run's requests and every request the service had answered by then. */
  soak: { requests: number; served: number; rssMb: number }[];
  /**
   * The process that served every case: its peak RSS, its RSS once they were done, and once V8
   * had given back what they left (see settledRss in run.ts; absent in reports made before).
   */
  memory: { peakMb: number; rssMb: number; settledMb?: number };
  /** Peak RSS of the fresh process that served only the soak runs. */
  soakPeakMb?: number;
}

interface Summary {
  name: string;
  requestsPerSecond: number;
  ratio: number;
  mean: number;
  p50: number;
  p99: number;
  errors: number;
  statementsPerRequest: number;
  serverCpuMs: number;
  databaseCpuMs: number;
  note?: string;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

/** One row per case: the mean over rounds, and its throughput as a ratio to the baseline's. */
function summarize(report: Report): Summary[] {
  const names = [...new Set(report.results.map((r) => r.name))];
  const rows = names.map((name) => {
    const runs = report.results.filter((r) => r.name === name);
    return {
      name,
      requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
      mean: mean(runs.map((r) => r.mean ?? NaN)),
      p50: mean(runs.map((r) => r.p50)),
      p99: mean(runs.map((r) => r.p99)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
      statementsPerRequest: mean(runs.map((r) => r.statementsPerRequest)),
      serverCpuMs: mean(runs.map((r) => r.serverCpuMs ?? NaN)),
      databaseCpuMs: mean(runs.map((r) => r.databaseCpuMs ?? NaN)),
      ...(runs[0]?.note ? { note: runs[0].note } : {}),
    };
  });
  const baseline = rows.find((r) => r.name.startsWith('baseline'))?.requestsPerSecond ?? 1;
  return rows.map((r) => ({ ...r, ratio: r.requestsPerSecond / baseline }));
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
/** Milliseconds: hundredths below 10 ms (one-connection p50s are fractional), tenths above. */
const fmtMs = (n: number) => fmt(n, n < 10 ? 2 : 1);
/** CPU milliseconds per request: thousandths below 1 ms (a single read costs a tenth of one). */
const fmtCpu = (n: number) => fmt(n, n < 1 ? 3 : 2);

interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | null;
}

/** The issue's targets, read off this run (null: the run did not measure it). */
function checkTargets(report: Report): TargetCheck[] {
  const rows = summarize(report);
  const row = (name: string) => rows.find((r) => r.name === name);
  const check = (target: string, value: number | undefined, met: (v: number) => boolean, show: (v: number) => string): TargetCheck =>
    value === undefined || !Number.isFinite(value)
      ? { target, measured: '–', met: null }
      : { target, measured: show(value), met: met(value) };
  const ratio = (v: number) => `${fmt(v, 2)}×`;
  const ms = (v: number) => `${fmtMs(v)} ms`;
  const idle = row('GraphQL trainer(id)');
  const storm = row('GraphQL trainer(id) during 20 concurrent logins');
  const lastSoak = report.soak.at(-1);
  const growth = report.soak.length === 2 ? ((report.soak[1].rssMb - report.soak[0].rssMb) / report.soak[0].rssMb) * 100 : undefined;
  const byId = row('REST GET /trainer/:id');
  const list = row('REST GET /trainer (list)');
  const page = row('GraphQL trainers page 100 × creatures 10');
  const handWritten = row('baseline nested page 100 × 10 (hand-written)');
  const heavyPage = row('GraphQL trainers page 100 × creatures 10 at offset 200 (a trainer of many creatures on it)');
  const lightPage = row('GraphQL trainers page 100 × creatures 10 at offset 300');
  const graphqlList = row('GraphQL trainers (list)');
  const handWrittenList = row('baseline list 20 at random offsets up to MAX_OFFSET (hand-written)');
  const handWrittenRange = row('baseline list 20 by a range of ids, no walk to the offset (hand-written)');
  const first = row('GraphQL first page, 1 connection');
  const end = row('GraphQL cursor page at the end, 1 connection');
  const federated = row('GraphQL trainer(id), FEDERATION=true');
  const ratioOf = (a: Summary | undefined, b: Summary | undefined) => (a && b ? a.requestsPerSecond / b.requestsPerSecond : undefined);
  return [
    check('GraphQL trainer(id) ≥ 0.9× baseline', idle?.ratio, (v) => v >= 0.9, ratio),
    // Unchanged within the noise of one run: the same instance, once a Federation subgraph.
    check(
      'GraphQL trainer(id) with FEDERATION=true ≥ 0.9× the same without',
      ratioOf(federated, idle),
      (v) => v >= 0.9,
      (v) => `${ratio(v)} (${fmt(federated?.requestsPerSecond ?? NaN)} vs ${fmt(idle?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    check('REST GET /trainer/:id ≥ 2× baseline', byId?.ratio, (v) => v >= 2, ratio),
    check(
      'nested page 100 × 10 ≥ 1.0× the hand-written page',
      ratioOf(page, handWritten),
      (v) => v >= 1,
      (v) => `${ratio(v)} (${fmt(page?.requestsPerSecond ?? NaN)} vs ${fmt(handWritten?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    check(
      'nested page with a trainer of many creatures on it ≥ 0.67× the same page without (cost within 1.5×)',
      ratioOf(heavyPage, lightPage),
      (v) => v >= 0.67,
      (v) => `${ratio(v)} (${fmt(heavyPage?.requestsPerSecond ?? NaN)} vs ${fmt(lightPage?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    check(
      'REST list (random offset up to MAX_OFFSET, totalCount) ≥ 0.75× REST GET /trainer/:id',
      ratioOf(list, byId),
      (v) => v >= 0.75,
      (v) => `${ratio(v)} (${fmt(list?.requestsPerSecond ?? NaN)} vs ${fmt(byId?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    // The list against the same answer written by hand (which walks the index to its offset on
    // every request, where the service keeps the ids); beside it, against the hand-written list
    // with no walk at all (a range of ids): the least a list of 20 costs by hand.
    check(
      'REST list ≥ 1.0× the same list written by hand',
      ratioOf(list, handWrittenList),
      (v) => v >= 1,
      (v) =>
        `${ratio(v)} (${fmt(list?.requestsPerSecond ?? NaN)} vs ${fmt(handWrittenList?.requestsPerSecond ?? NaN)} req/s); ${ratio(ratioOf(list, handWrittenRange) ?? NaN)} the hand-written list by a range of ids, no walk to the offset (${fmt(handWrittenRange?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    check(
      'GraphQL list (random offset up to MAX_OFFSET, totalCount) ≥ 0.75× GraphQL trainer(id)',
      ratioOf(graphqlList, idle),
      (v) => v >= 0.75,
      (v) => `${ratio(v)} (${fmt(graphqlList?.requestsPerSecond ?? NaN)} vs ${fmt(idle?.requestsPerSecond ?? NaN)} req/s)`,
    ),
    // At one connection the p50 is each answer's own time (see run in run.ts), not whole milliseconds.
    check(
      'cursor page at the end: p50 within 2× the first page (1 connection)',
      end && first ? end.p50 / first.p50 : undefined,
      (v) => v <= 2,
      (v) =>
        `${ratio(v)} (p50 ${fmt(end?.p50 ?? NaN, 2)} vs ${fmt(first?.p50 ?? NaN, 2)} ms; mean ${fmt(end?.mean ?? NaN, 2)} vs ${fmt(first?.mean ?? NaN, 2)} ms)`,
    ),
    check('nicknameContains p50 ≤ 25 ms (1 connection)', row('GraphQL nicknameContains, 1 connection')?.p50, (v) => v <= 25, ms),
    check(
      'trainers page 100 × creatures 10 in ≤ 4 SQL statements',
      row('GraphQL trainers page 100 × creatures 10')?.statementsPerRequest,
      (v) => v <= 4,
      (v) => fmt(v, 2),
    ),
    check(
      'deep paging (offset MAX_OFFSET-20) p50 ≤ 25 ms (1 connection)',
      row('GraphQL deep paging (offset MAX_OFFSET-20), 1 connection')?.p50,
      (v) => v <= 25,
      ms,
    ),
    // The caller, the trainers added since the last list (TrainerIndex) and the page: no COUNT and
    // no walk of the skipped rows. Requests cut off when a case ends add a few hundredths.
    check(
      'deep paging at one connection: caller and page (≤ 3 statements)',
      row('GraphQL deep paging (offset MAX_OFFSET-20), 1 connection')?.statementsPerRequest,
      (v) => v < 3.1,
      (v) => fmt(v, 2),
    ),
    check(
      'trainer(id) p99 during 20 logins ≤ 3× idle p99',
      storm && idle ? storm.p99 / idle.p99 : undefined,
      (v) => v <= 3,
      (v) => `${fmt(v, 2)}× (${fmt(storm?.p99 ?? NaN, 1)} / ${fmt(idle?.p99 ?? NaN, 1)} ms)`,
    ),
    // What the process holds once idle: right after the last case, V8 has not yet given back the
    // garbage of the load (its memory reducer runs after a few idle seconds).
    check(
      'RSS ≤ 150 MB after every case, once idle',
      report.memory.rssMb > 0 ? (report.memory.settledMb ?? report.memory.rssMb) : undefined,
      (v) => v <= 150,
      (v) =>
        report.memory.settledMb === undefined
          ? `${v} MB (peak ${report.memory.peakMb} MB)`
          : `${v} MB (${report.memory.rssMb} MB right after the last case; peak ${report.memory.peakMb} MB)`,
    ),
    check(
      'RSS ≤ 150 MB after 100k requests',
      lastSoak && lastSoak.served >= 100_000 ? lastSoak.rssMb : undefined,
      (v) => v <= 150,
      (v) => `${v} MB after ${lastSoak?.served} requests`,
    ),
    check(
      'RSS growth < 10% between two consecutive soak runs',
      growth,
      (v) => v < 10,
      (v) => `${fmt(v, 1)} %`,
    ),
  ];
}

const verdict = (met: boolean | null) => (met === null ? 'not measured' : met ? 'met' : 'NOT met');

export function renderTable(report: Report): string {
  const rows = summarize(report);
  const header = ['case', 'req/s', 'x baseline', 'p50 ms', 'p99 ms', 'SQL/req', 'server CPU ms/req', 'DB CPU ms/req', 'errors'];
  const body = rows.map((r) => [
    r.name,
    fmt(r.requestsPerSecond),
    fmt(r.ratio, 2),
    fmtMs(r.p50),
    fmt(r.p99, 1),
    fmt(r.statementsPerRequest, 2),
    fmtCpu(r.serverCpuMs),
    fmtCpu(r.databaseCpuMs),
    String(r.errors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  const growth = report.soak.length === 2 ? ((report.soak[1].rssMb - report.soak[0].rssMb) / report.soak[0].rssMb) * 100 : NaN;
  return [
    `${report.mode} — ${report.machine}`,
    line(header),
    ...body.map(line),
    `cases: peak RSS ${report.memory.peakMb} MB, ${report.memory.rssMb} MB at the end, ${report.memory.settledMb ?? '–'} MB once settled; fresh process, RSS after soak runs ${report.soak.map((s) => `${s.rssMb} MB (${s.requests} req; ${s.served} served in all)`).join(', ')}; growth ${fmt(growth, 1)} %`,
    report.seedSeconds === null ? 'seed: reused' : `seed: ${fmt(report.seedSeconds, 1)} s`,
    'targets:',
    ...checkTargets(report).map((t) => `  ${verdict(t.met).padEnd(12)} ${t.target}: ${t.measured}`),
  ].join('\n');
}

export function renderMarkdown(report: Report, chartFile: string): string {
  const rows = summarize(report);
  return [
    `# Benchmark ${report.when}`,
    '',
    `${report.mode}; ${report.machine}.`,
    `Options: \`${JSON.stringify(report.options)}\`. Seed: ${report.seedSeconds === null ? 'reused' : `${fmt(report.seedSeconds, 1)} s`}.`,
    '',
    '| case | req/s | × baseline | p50 ms | p99 ms | SQL statements / request | server CPU ms / request | database CPU ms / request | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name}${r.note ? ` (${r.note})` : ''} | ${fmt(r.requestsPerSecond)} | ${fmt(r.ratio, 2)} | ${fmtMs(r.p50)} | ${fmt(r.p99, 1)} | ${fmt(r.statementsPerRequest, 2)} | ${fmtCpu(r.serverCpuMs)} | ${fmtCpu(r.databaseCpuMs)} | ${r.errors} |`,
    ),
    '',
    'CPU per request is read from /proc before and after each run: the process that answered (the service, or the hand-written baseline), and the database server when it is a process of this machine whose pid file can be read (– otherwise, and with SQLite, which runs inside the service), less what it spends while idle. Times req/s, each gives the share of a core that process used; autocannon, in the bench process, uses the rest and is not measured.',
    '',
    `Every case in one process: peak RSS ${report.memory.peakMb} MB, ${report.memory.rssMb} MB once they were done, ${report.memory.settledMb ?? '–'} MB once V8 had given back what they left. A fresh process then served two consecutive soak runs of GraphQL trainer(id) (peak ${report.soakPeakMb ?? '–'} MB); RSS after each: ${report.soak.map((s) => `${s.rssMb} MB after ${s.requests} requests (${s.served} served since start)`).join('; ')}.`,
    '',
    '| target | measured | |',
    '|---|---|---|',
    ...checkTargets(report).map((t) => `| ${t.target} | ${t.measured} | ${verdict(t.met)} |`),
    '',
    `![throughput and p99 per case](${chartFile})`,
    '',
  ].join('\n');
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Two horizontal bar charts: throughput as a ratio to the baseline, and p99 latency. */
export function renderChart(report: Report): string {
  const rows = summarize(report);
  const barHeight = 22;
  const labelWidth = 340;
  const chartWidth = 360;
  const panelHeight = rows.length * barHeight + 40;
  const maxRatio = Math.max(1, ...rows.map((r) => r.ratio));
  const maxP99 = Math.max(1, ...rows.map((r) => r.p99));
  const panel = (title: string, y0: number, value: (r: Summary) => number, max: number, label: (r: Summary) => string) => [
    `<text x="10" y="${y0 + 18}" font-weight="bold">${escape(title)}</text>`,
    ...rows.map((r, i) => {
      const y = y0 + 30 + i * barHeight;
      const width = Math.max(1, (value(r) / max) * chartWidth);
      const fill = r.name.startsWith('baseline') ? '#888' : '#3b6fb6';
      return [
        `<text x="10" y="${y + 14}">${escape(r.name)}</text>`,
        `<rect x="${labelWidth}" y="${y + 3}" width="${width.toFixed(1)}" height="${barHeight - 6}" fill="${fill}"/>`,
        `<text x="${labelWidth + width + 6}" y="${y + 14}">${escape(label(r))}</text>`,
      ].join('');
    }),
  ];
  const height = panelHeight * 2 + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + chartWidth + 120}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...panel(
      'Throughput (× baseline, same run)',
      0,
      (r) => r.ratio,
      maxRatio,
      (r) => `${fmt(r.ratio, 2)}× (${fmt(r.requestsPerSecond)}/s)`,
    ),
    ...panel(
      'p99 latency (ms)',
      panelHeight + 10,
      (r) => r.p99,
      maxP99,
      (r) => `${fmt(r.p99, 1)} ms`,
    ),
    '</svg>',
    '',
  ].join('\n');
}
