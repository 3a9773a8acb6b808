import type { Channel, ChannelSpec } from '../common/channel';

/**
 * Sessions that just ended: one (`sessionId`), every one of a trainer up to an id (`upTo`, the
 * oldest beyond the cap), or every one of a trainer (neither), but `except` (the caller's own,
 * when a trainer ends its other sessions).
 */
export interface SessionsEnded {
  readonly trainerId: number;
  readonly sessionId?: number;
  readonly upTo?: number;
  readonly except?: number;
}

/** Whether a session of `trainerId` numbered `sessionId` is among those ended. */
export function isEnded(ended: SessionsEnded, trainerId: number, sessionId: number): boolean {
  if (ended.trainerId !== trainerId || ended.except === sessionId) return false;
  if (ended.sessionId !== undefined) return ended.sessionId === sessionId;
  if (ended.upTo !== undefined) return sessionId <= ended.upTo;
  return true;
}

/**
 * Tells whoever holds something on a session's behalf (an open WebSocket, mainly) that sessions
 * ended, in this process at once and, with REDIS_URL, on every other instance within Redis's
 * pub/sub delay. The database stays the authority: a notice lost while Redis is away is caught by
 * the next check against it (the WebSocket sweep), only later.
 */
export type SessionEndings = Channel<SessionsEnded>;

const optionalId = (value: unknown): value is number | undefined => value === undefined || Number.isSafeInteger(value);

/** One channel that every instance follows from its start. */
export const SESSION_ENDINGS: ChannelSpec<SessionsEnded> = {
  name: 'registry:sessions-ended',
  field: 'ended',
  label: 'session endings',
  decode: (value) => {
    if (typeof value !== 'object' || value === null) return undefined;
    const { trainerId, sessionId, upTo, except } = value as Partial<Record<keyof SessionsEnded, unknown>>;
    if (typeof trainerId !== 'number' || !Number.isSafeInteger(trainerId)) return undefined;
    if (!optionalId(sessionId) || !optionalId(upTo) || !optionalId(except)) return undefined;
    return { trainerId, sessionId, upTo, except };
  },
};
