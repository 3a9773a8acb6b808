import { isDatabaseUnavailable, unavailableAsAppError } from '../../src/db/errors';
import { toAppError } from '../../src/error-mapping';
import { AppError } from '../../src/errors';

/** A driver error as mysql2 raises it. */
const driverError = (code: string, errno: number, message: string) => Object.assign(new Error(message), { code, errno });

describe('database errors as catalogue errors', () => {
  it('takes a Galera node that is not ready (1047 WSREP) for the database being away, and no other 1047', () => {
    expect(isDatabaseUnavailable(driverError('ER_UNKNOWN_COM_ERROR', 1047, 'WSREP has not yet prepared node for application use'))).toBe(
      true,
    );
    expect(isDatabaseUnavailable(driverError('ER_UNKNOWN_COM_ERROR', 1047, 'Unknown command'))).toBe(false);
  });

  it('answers SERVICE_UNAVAILABLE with Retry-After wherever the database being away is met', () => {
    const refused = driverError('ECONNREFUSED', -111, 'connect ECONNREFUSED 127.0.0.1:3306');
    for (const mapped of [unavailableAsAppError(refused), toAppError(refused)]) {
      expect(mapped).toBeInstanceOf(AppError);
      expect([(mapped as AppError).code, (mapped as AppError).retryAfter]).toEqual(['SERVICE_UNAVAILABLE', 2]);
    }
  });
});
