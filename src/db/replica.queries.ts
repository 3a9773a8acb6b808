/*
 * The statements of the replicas' lag measurement (replicas.ts), on the replica_heartbeat table
 * (MySQL/MariaDB only; made by the ReplicaHeartbeat migration).
 */

/** On the primary: its one heartbeat row gets the time. */
export const BEAT =
  'INSERT INTO replica_heartbeat (id, beat_at) VALUES (1, UTC_TIMESTAMP(3)) ON DUPLICATE KEY UPDATE beat_at = UTC_TIMESTAMP(3)';

/** On a replica: how far behind it is, the primary's last heartbeat it has applied against the clock (µs). */
export const LAG = 'SELECT TIMESTAMPDIFF(MICROSECOND, beat_at, UTC_TIMESTAMP(3)) AS lag FROM replica_heartbeat WHERE id = 1';
