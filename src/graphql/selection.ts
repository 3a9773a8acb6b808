import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the field being resolved selects the path `names` (`'creaturesOwned'`, or
 * `'items', 'creaturesOwned'`), directly or through fragments. A hint for reading ahead in the
 * same statement: when it says no, the field still works, one query later.
 */
export function selectsField(info: GraphQLResolveInfo, ...names: string[]): boolean {
  const search = (set: SelectionSetNode | undefined, path: string[], seen: Set<string>): boolean =>
    set?.selections.some((selection) => {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== path[0]) return false;
        return path.length === 1 || search(selection.selectionSet, path.slice(1), new Set());
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) return search(selection.selectionSet, path, seen);
      const fragmentName = selection.name.value;
      if (seen.has(fragmentName)) return false;
      seen.add(fragmentName);
      return search(info.fragments[fragmentName]?.selectionSet, path, seen);
    }) ?? false;
  return info.fieldNodes.some((node) => search(node.selectionSet, names, new Set()));
}

const selections = new WeakMap<object, ReadonlySet<string>>();

/**
 * The names of the fields selected on the value of the field being resolved, through fragments
 * and whatever their directives say (a superset of what will be read), remembered per field of a
 * parsed document.
 */
export function selectedFieldNames(info: GraphQLResolveInfo): ReadonlySet<string> {
  return selectedNames(info.fieldNodes, info.fragments);
}

/** selectedFieldNames for the given nodes of one field (remembered per node when there is one). */
export function selectedNames(fieldNodes: readonly FieldNode[], fragments: GraphQLResolveInfo['fragments']): ReadonlySet<string> {
  const cacheKey = fieldNodes.length === 1 ? fieldNodes[0] : fieldNodes;
  const known = selections.get(cacheKey);
  if (known) return known;
  const names = new Set<string>();
  const seen = new Set<string>();
  const collect = (set: SelectionSetNode | undefined): void => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) names.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        collect(fragments[selection.name.value]?.selectionSet);
      }
    }
  };
  for (const node of fieldNodes) collect(node.selectionSet);
  selections.set(cacheKey, names);
  return names;
}

const onlyFields = new WeakMap<readonly FieldNode[], Map<string, FieldNode | null>>();

/**
 * The field node at `path` below the field being resolved (`'items', 'creatures'`), through
 * fragments, when the document selects it exactly once on the way, without directives; else
 * undefined. Remembered per field of a parsed document.
 */
export function onlyNestedField(info: GraphQLResolveInfo, ...path: string[]): FieldNode | undefined {
  const key = path.join('.');
  let known = onlyFields.get(info.fieldNodes);
  if (!known) onlyFields.set(info.fieldNodes, (known = new Map<string, FieldNode | null>()));
  if (!known.has(key)) {
    let level: readonly FieldNode[] = info.fieldNodes;
    for (const name of path) {
      const found: FieldNode[] = [];
      const seen = new Set<string>();
      const collect = (set: SelectionSetNode | undefined): void => {
        for (const selection of set?.selections ?? []) {
          if (selection.kind === Kind.FIELD) {
            if (selection.name.value === name) found.push(selection);
          } else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet);
          else if (!seen.has(selection.name.value)) {
            seen.add(selection.name.value);
            collect(info.fragments[selection.name.value]?.selectionSet);
          }
        }
      };
      for (const node of level) collect(node.selectionSet);
      level = found;
      if (found.length !== 1 || (found[0].directives?.length ?? 0) > 0) break;
    }
    known.set(key, level.length === 1 && (level[0].directives?.length ?? 0) === 0 ? level[0] : null);
  }
  return known.get(key) ?? undefined;
}
