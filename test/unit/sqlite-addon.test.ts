import { execFileSync } from 'node:child_process';
import { sqliteAddonProblem } from '../../src/db/sqlite-addon';

/*
 * The embedded database must survive garbage collection on the Node it runs on: better-sqlite3 12
 * built against Node 24.19+ headers aborts the process when a statement or a database is
 * collected (src/db/sqlite-addon.ts). CI runs this on the machine's Node and on Node 24.
 */

/** Prepares and drops statements, closes databases with statements still referenced, and lets them be collected. */
const UNDER_GC = `
const Database = require('better-sqlite3');
for (let round = 0; round < 30; round += 1) {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  let statements = [];
  for (let i = 0; i < 200; i += 1) statements.push(db.prepare('SELECT ' + i + ' AS x FROM t WHERE id = ?'));
  for (let i = 0; i < 200; i += 1) db.prepare('INSERT INTO t (v) VALUES (?)').run('x' + i);
  if (round % 2 === 0) db.close();
  statements = [];
  // Collections the allocations trigger (not an explicit gc(), which runs where Node's
  // environment is at hand and so hides the abort).
  let junk = [];
  for (let i = 0; i < 200000; i += 1) junk.push({ i, text: 'x' + i });
  junk = [];
}
process.stdout.write('survived');
`;

describe('the SQLite driver under garbage collection', () => {
  it('survives statements and databases being collected, open or closed', () => {
    const output = execFileSync(process.execPath, ['-e', UNDER_GC], { cwd: __dirname, encoding: 'utf8', stdio: 'pipe' });
    expect(output).toBe('survived');
  });

  it('is not refused at start-up when it survives', () => {
    expect(sqliteAddonProblem()).toBeUndefined();
  });
});
