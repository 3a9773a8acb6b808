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
