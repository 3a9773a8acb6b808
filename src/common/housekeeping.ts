/** A chore an instance runs now and then: how many rows it removed. */
export interface Chore {
  /** What it does, for the log ("purging expired sessions"). */
  readonly label: string;
  readonly run: () => Promise<number>;
  /** The first run comes soon after start, so that a fleet restarted often still runs it. */
  readonly firstMs: number;
  readonly everyMs: number;
}

/**
 * Runs `chore` now and then until stopped (the app's onClose): the next run is scheduled when
 * one ends, so runs never overlap. Several instances may run the same chore; each chore is
 * written so that this is harmless. A failed run (the database away) is logged and tried again at
 * the next turn.
 */
export function scheduleChore(
  chore: Chore,
  log: { info(details: object, message: string): void; warn(details: object, message: string): void },
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout;
  const run = () => {
    running = chore
      .run()
      .then((removed) => {
        if (removed > 0) log.info({ removed }, `${chore.label}: done`);
      })
      .catch((error: unknown) => log.warn({ err: error }, `${chore.label} failed; trying again later`))
      .finally(() => {
        running = undefined;
        timer = setTimeout(run, chore.everyMs).unref();
      });
  };
  timer = setTimeout(run, chore.firstMs).unref();
  return {
    async stop() {
      clearTimeout(timer);
      await running;
      clearTimeout(timer);
    },
  };
}
