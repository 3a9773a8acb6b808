import { stdSerializers } from 'pino';

/**
 * Errors as logged: pino's serializer copies every enumerable field, and a TypeORM
 * QueryFailedError carries the statement's parameters (emails, password hashes) and the
 * driver's error with the SQL. Keep the message, stack and codes; drop the values.
 */
export function errorForLog(error: Error): ReturnType<typeof stdSerializers.err> {
  const out: ReturnType<typeof stdSerializers.err> = { ...stdSerializers.err(error) };
  const driverError = out.driverError as { code?: unknown; errno?: unknown } | undefined;
  for (const key of ['parameters', 'driverError', 'sql', 'sqlMessage', 'values']) delete out[key];
  if (driverError) {
    out.driverCode = driverError.code;
    out.driverErrno = driverError.errno;
  }
  return out;
}
