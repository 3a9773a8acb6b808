import { createHash } from 'node:crypto';
// What the committed API documents (schema.graphql, openapi.json) promise to clients, and which
// changes break that promise. `npm run schema` and `npm run openapi` refuse to write a breaking
// change that docs/api-changes.md does not record, and the test suite fails on one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema, findBreakingChanges } from 'graphql';

export const ROOT = join(__dirname, '..');
export const CHANGES_FILE = join(ROOT, 'docs', 'api-changes.md');

/** Each breaking change of schema.graphql, in graphql-js's words (`Trainer.email was removed.`). */
export function graphqlBreakingChanges(before: string, after: string): string[] {
  return findBreakingChanges(buildSchema(before), buildSchema(after)).map((change) => `${change.type}: ${change.description}`);
}

type Json = Record<string, unknown>;
type Schema = Json & { $ref?: string; properties?: Record<string, Schema>; required?: string[]; items?: Schema; enum?: unknown[] };

/** A pattern as a change line shows it: itself when short and quotable in Markdown, else a fingerprint. */
function shownPattern(pattern: unknown): string {
  if (typeof pattern !== 'string') return '"none"';
  if (pattern.length <= 80 && !pattern.includes('`')) return JSON.stringify(pattern);
  return `sha256:${createHash('sha256').update(pattern).digest('hex').slice(0, 12)} (${pattern.length} characters)`;
}

/**
 * Each breaking change between two OpenAPI documents, for a client written against `before`:
 * a path, method, parameter or success answer gone; a request it sent now refused (a new
 * required field or parameter, a field no longer accepted, a narrower range, length, pattern,
 * type or enum); an answer it read now shaped differently (a field gone or no longer always
 * there, another type, an enum value it does not know).
 */
export function openApiBreakingChanges(before: Json, after: Json): string[] {
  const changes: string[] = [];
  const resolve = (document: Json, schema: Schema | undefined): Schema | undefined => {
    let current = schema;
    for (let hops = 0; current?.$ref && hops < 10; hops += 1) {
      const name = current.$ref.replace(/^#\/components\/schemas\//, '');
      current = ((document.components as Json | undefined)?.schemas as Record<string, Schema> | undefined)?.[name];
    }
    return current;
  };

  const compare = (where: string, oldRaw: Schema | undefined, newRaw: Schema | undefined, direction: 'request' | 'response', depth = 0) => {
    const old = resolve(before, oldRaw);
    const neu = resolve(after, newRaw);
    if (!old || !neu || depth > 20) return;
    if (JSON.stringify(old.type) !== JSON.stringify(neu.type) && old.type !== undefined) {
      changes.push(`${where}: type ${JSON.stringify(old.type)} became ${JSON.stringify(neu.type)}`);
      return;
    }
    const oldEnum = old.enum ?? [];
    const newEnum = neu.enum ?? [];
    if (direction === 'request') {
      for (const value of oldEnum)
        if (!newEnum.includes(value)) changes.push(`${where}: value ${JSON.stringify(value)} is no longer accepted`);
      if (old.enum === undefined && neu.enum !== undefined) changes.push(`${where}: now limited to ${JSON.stringify(newEnum)}`);
      const narrower = (key: string, tighter: (o: number, n: number) => boolean) => {
        const o = old[key];
        const n = neu[key];
        if (typeof n === 'number' && (typeof o !== 'number' || tighter(o, n)))
          changes.push(`${where}: ${key} ${JSON.stringify(o ?? 'none')} became ${n}`);
      };
      narrower('minimum', (o, n) => n > o);
      narrower('exclusiveMinimum', (o, n) => n > o);
      narrower('minLength', (o, n) => n > o);
      narrower('minItems', (o, n) => n > o);
      narrower('maximum', (o, n) => n < o);
      narrower('exclusiveMaximum', (o, n) => n < o);
      narrower('maxLength', (o, n) => n < o);
      narrower('maxItems', (o, n) => n < o);
      if (neu.pattern !== undefined && neu.pattern !== old.pattern)
        changes.push(`${where}: pattern ${shownPattern(old.pattern)} became ${shownPattern(neu.pattern)}`);
      if (neu.format !== undefined && neu.format !== old.format)
        changes.push(`${where}: format ${JSON.stringify(old.format ?? 'none')} became ${JSON.stringify(neu.format)}`);
      const oldRequired = new Set(old.required ?? []);
      for (const name of neu.required ?? []) if (!oldRequired.has(name)) changes.push(`${where}.${name}: now required`);
      for (const name of Object.keys(old.properties ?? {})) {
        if (!(name in (neu.properties ?? {})) && neu.additionalProperties === false) changes.push(`${where}.${name}: no longer accepted`);
      }
    } else {
      for (const value of newEnum)
        if (old.enum !== undefined && !oldEnum.includes(value)) changes.push(`${where}: may now be ${JSON.stringify(value)}`);
      const newRequired = new Set(neu.required ?? []);
      for (const name of old.required ?? []) if (!newRequired.has(name)) changes.push(`${where}.${name}: no longer always present`);
      for (const name of Object.keys(old.properties ?? {})) {
        if (!(name in (neu.properties ?? {}))) changes.push(`${where}.${name}: removed`);
      }
    }
    for (const [name, property] of Object.entries(old.properties ?? {})) {
      compare(`${where}.${name}`, property, neu.properties?.[name], direction, depth + 1);
    }
    if (old.items) compare(`${where}[]`, old.items, neu.items, direction, depth + 1);
  };

  const oldPaths = (before.paths ?? {}) as Record<string, Record<string, Json>>;
  const newPaths = (after.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(oldPaths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      const next = newPaths[path]?.[method];
      if (!next) {
        changes.push(`${where}: removed`);
        continue;
      }
      type Parameter = { in: string; name: string; required?: boolean; schema?: Schema };
      const oldParameters = (operation.parameters ?? []) as Parameter[];
      const newParameters = (next.parameters ?? []) as Parameter[];
      for (const parameter of newParameters) {
        const previous = oldParameters.find((p) => p.in === parameter.in && p.name === parameter.name);
        if (parameter.required && !previous?.required) changes.push(`${where} ${parameter.in} parameter ${parameter.name}: now required`);
      }
      for (const parameter of oldParameters) {
        const current = newParameters.find((p) => p.in === parameter.in && p.name === parameter.name);
        if (!current) changes.push(`${where} ${parameter.in} parameter ${parameter.name}: removed`);
        else compare(`${where} ${parameter.in} parameter ${parameter.name}`, parameter.schema, current.schema, 'request');
      }
      const body = (op: Json) => ((op.requestBody as Json | undefined)?.content as Record<string, { schema?: Schema }> | undefined) ?? {};
      for (const [type, media] of Object.entries(body(operation))) {
        const current = body(next)[type];
        if (!current) changes.push(`${where} body ${type}: no longer accepted`);
        else compare(`${where} body`, media.schema, current.schema, 'request');
      }
      if (!(operation.requestBody as Json | undefined)?.required && (next.requestBody as Json | undefined)?.required) {
        changes.push(`${where} body: now required`);
      }
      const oldResponses = (operation.responses ?? {}) as Record<string, Json>;
      const newResponses = (next.responses ?? {}) as Record<string, Json>;
      for (const [status, response] of Object.entries(oldResponses)) {
        if (!status.startsWith('2')) continue;
        const current = newResponses[status];
        if (!current) {
          changes.push(`${where} ${status}: no longer answered`);
          continue;
        }
        const content = (r: Json) => (r.content as Record<string, { schema?: Schema }> | undefined) ?? {};
        for (const [type, media] of Object.entries(content(response))) {
          const now = content(current)[type];
          if (!now) changes.push(`${where} ${status} ${type}: no longer answered`);
          else compare(`${where} ${status}`, media.schema, now.schema, 'response');
        }
      }
    }
  }
  return changes;
}

/** The breaking changes that docs/api-changes.md records: each bullet of it that starts with a `quoted` change. */
export function recordedBreakingChanges(text = readFileSync(CHANGES_FILE, 'utf8')): Set<string> {
  const recorded = new Set<string>();
  for (const match of text.matchAll(/^- `([^`]+)`/gm)) recorded.add(match[1]);
  return recorded;
}

/** The breaking changes from `before` to `after` that are not recorded. */
export function unrecorded(changes: string[], recorded = recordedBreakingChanges()): string[] {
  return changes.filter((change) => !recorded.has(change));
}

/** Exits with the list when a regeneration would write a breaking change nobody recorded. */
export function refuseUnrecorded(file: string, changes: string[]): void {
  const missing = unrecorded(changes);
  if (missing.length === 0) return;
  process.stderr.write(
    `Not writing ${file}: it would break what clients were promised:\n${missing.map((c) => `  - ${c}`).join('\n')}\n` +
      'Undo the change, or record each line in docs/api-changes.md (as "- `<the line>`: why") and run this again.\n',
  );
  process.exit(1);
}
