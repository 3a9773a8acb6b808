/** The error catalogue shared by both transports (docs/api.md, "Error catalogue"). */
export const ERROR_STATUS = {
  BAD_USER_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  /**
   * A document named by id (documentId, APQ) that is not known, or one outside TRUSTED_DOCUMENTS.
   * GraphQL only, and answered there with HTTP 200, as APQ clients expect; 404 is its REST status.
   */
  PERSISTED_QUERY_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  DUPLICATE_CREATURE: 409,
  TRAINER_ALREADY_EXISTS: 409,
  REQUEST_TIMEOUT: 408,
  /**
   * A resumed subscription (`creatureEvents(after)`) whose missed events are no longer kept: the
   * client fetches the data again and subscribes anew. GraphQL only; 410 is its REST status.
   */
  EVENTS_EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/** An expected failure with a catalogue code. Transports map `code` to their own shape. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: readonly FieldError[],
    /** Seconds until trying again makes sense (RATE_LIMITED). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'AppError';
  }
}
