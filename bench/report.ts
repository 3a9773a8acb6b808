// Turns benchmark results into a console table, a Markdown page and an SVG chart.

export interface CaseResult {
  name: string;
  round: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  /** SQL statements the service sent per request, from its db_statements_total counter. */
  statementsPerRequest: number;
  note?: string;
}

export interface Report {
  when: string;
  mode: string;
  machine: string;
  options: Record<string, unknown>;
  seedSeconds: number | null;
  results: CaseResult[];
  soak: { requests: number; rssMb: number }[];
  memory: { peakMb: number; rssMb: number };
}

export interface Summary {
  name: string;
  requestsPerSecond: number;
  ratio: number;
  p50: number;
  p99: number;
  errors: number;
  statementsPerRequest: number;
  note?: string;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

/** One row per case: the mean over rounds, and its throughput as a ratio to the baseline's. */
export function summarize(report: Report): Summary[] {
  const names = [...new Set(report.results.map((r) => r.name))];
  const rows = names.map((name) => {
    const runs = report.results.filter((r) => r.name === name);
    return {
      name,
      requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
      p50: mean(runs.map((r) => r.p50)),
      p99: mean(runs.map((r) => r.p99)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
      statementsPerRequest: mean(runs.map((r) => r.statementsPerRequest)),
      ...(runs[0]?.note ? { note: runs[0].note } : {}),
    };
  });
  const baseline = rows.find((r) => r.name.startsWith('baseline'))?.requestsPerSecond ?? 1;
  return rows.map((r) => ({ ...r, ratio: r.requestsPerSecond / baseline }));
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–');

export function renderTable(report: Report): string {
  const rows = summarize(report);
  const header = ['case', 'req/s', 'x baseline', 'p50 ms', 'p99 ms', 'SQL/req', 'errors'];
  const body = rows.map((r) => [r.name, fmt(r.requestsPerSecond), fmt(r.ratio, 2), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.statementsPerRequest, 2), String(r.errors)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const growth = report.soak.length === 2 ? ((report.soak[1]!.rssMb - report.soak[0]!.rssMb) / report.soak[0]!.rssMb) * 100 : NaN;
  return [
    `${report.mode} — ${report.machine}`,
    line(header),
    ...body.map(line),
    `peak RSS ${report.memory.peakMb} MB; RSS after soak runs ${report.soak.map((s) => `${s.rssMb} MB (${s.requests} req)`).join(', ')}; growth ${fmt(growth, 1)} %`,
    report.seedSeconds === null ? 'seed: reused' : `seed: ${fmt(report.seedSeconds, 1)} s`,
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
    '| case | req/s | × baseline | p50 ms | p99 ms | SQL statements / request | errors |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name}${r.note ? ` (${r.note})` : ''} | ${fmt(r.requestsPerSecond)} | ${fmt(r.ratio, 2)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.statementsPerRequest, 2)} | ${r.errors} |`,
    ),
    '',
    `Peak RSS ${report.memory.peakMb} MB. RSS after consecutive soak runs: ${report.soak.map((s) => `${s.rssMb} MB after ${s.requests} requests`).join('; ')}.`,
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
    ...panel('Throughput (× baseline, same run)', 0, (r) => r.ratio, maxRatio, (r) => `${fmt(r.ratio, 2)}× (${fmt(r.requestsPerSecond)}/s)`),
    ...panel('p99 latency (ms)', panelHeight + 10, (r) => r.p99, maxP99, (r) => `${fmt(r.p99, 1)} ms`),
    '</svg>',
    '',
  ].join('\n');
}
