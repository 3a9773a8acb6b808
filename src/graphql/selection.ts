import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

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

const selections = new WeakMap<readonly unknown[], ReadonlySet<string>>();

/**
 * The names of the fields selected on the value of the field being resolved, through fragments
 * and whatever their directives say (a superset of what will be read), remembered per field of a
 * parsed document.
 */
export function selectedFieldNames(info: GraphQLResolveInfo): ReadonlySet<string> {
  const known = selections.get(info.fieldNodes);
  if (known) return known;
  const names = new Set<string>();
  const seen = new Set<string>();
  const collect = (set: SelectionSetNode | undefined): void => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) names.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        collect(info.fragments[selection.name.value]?.selectionSet);
      }
    }
  };
  for (const node of info.fieldNodes) collect(node.selectionSet);
  selections.set(info.fieldNodes, names);
  return names;
}
