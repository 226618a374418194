/** Sets `value` at a dotted path ("server.url") in a plain object, creating the objects on the way. Used to apply
 * environment overrides to raw settings before they are validated against their schema. */
export function setPath(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let o = obj;
  for (const p of parts.slice(0, -1)) {
    if (typeof o[p] !== 'object' || o[p] === null) o[p] = {};
    o = o[p] as Record<string, unknown>;
  }
  o[parts[parts.length - 1]] = value;
}
