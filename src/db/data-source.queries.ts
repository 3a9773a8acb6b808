/** The statements of the connection itself: readiness and the migrations' turn-taking (MySQL). */

/** GET /readyz: the database answers. */
export const PING = 'SELECT 1';

/**
 * The migrations' turn (MySQL): one row that the instance migrating holds. A row, not GET_LOCK,
 * because a Galera cluster certifies a row's insert on every node (two nodes inserting it at
 * once: one commits, the other gets a conflict), while GET_LOCK is one node's alone. The holder
 * renews it while it migrates; a row not renewed for MIGRATION_LOCK_STALE_S seconds was left by
 * a migrator that died, and is taken over.
 */
export const MIGRATION_LOCK_STALE_S = 30;

export const CREATE_MIGRATION_LOCK =
  'CREATE TABLE IF NOT EXISTS migration_lock (id TINYINT NOT NULL PRIMARY KEY, holder VARCHAR(64) NOT NULL, renewed_at DATETIME(3) NOT NULL) ENGINE=InnoDB';

export const TAKE_MIGRATION_LOCK = 'INSERT INTO migration_lock (id, holder, renewed_at) VALUES (1, ?, UTC_TIMESTAMP(3))';

export const TAKE_OVER_STALE_MIGRATION_LOCK = `DELETE FROM migration_lock WHERE id = 1 AND renewed_at < UTC_TIMESTAMP(3) - INTERVAL ${MIGRATION_LOCK_STALE_S} SECOND`;

export const RENEW_MIGRATION_LOCK = 'UPDATE migration_lock SET renewed_at = UTC_TIMESTAMP(3) WHERE id = 1 AND holder = ?';

export const RELEASE_MIGRATION_LOCK = 'DELETE FROM migration_lock WHERE id = 1 AND holder = ?';
