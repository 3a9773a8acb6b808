/** The statements of the connection itself: readiness and the migrations' turn-taking (MySQL). */

/** GET /readyz: the database answers. */
export const PING = 'SELECT 1';

/** A named lock that instances migrating at once take in turn (60 s at most); `locked` is 1 when taken. */
export const TAKE_MIGRATION_LOCK = 'SELECT GET_LOCK(?, 60) AS locked';

export const RELEASE_MIGRATION_LOCK = 'SELECT RELEASE_LOCK(?)';
