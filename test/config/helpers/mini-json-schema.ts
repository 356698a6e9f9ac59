/**
 * A deliberately small JSON Schema checker, covering only the keywords the generated config schema
 * uses. It lets the tests show that the published schema accepts the examples and rejects obvious
 * mistakes without pulling a full validator into the project.
 */
type Schema = { [key: string]: unknown };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function typeMatches(type: string, value: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

/** Every keyword this checker understands; the schema test asserts nothing else appears. */
export const SUPPORTED_KEYWORDS = new Set([
  '$schema',
  '$ref',
  '$defs',
  'title',
  'description',
  'default',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'items',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'not',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'uniqueItems',
  'pattern',
  'format',
]);

/** Returns the JSON-ish paths at which `value` violates `schema` (empty when it conforms). */
export function check(root: Schema, value: unknown): string[] {
  const defs = (root.$defs ?? {}) as Record<string, Schema>;
  const errors: string[] = [];

  const visit = (schema: Schema, v: unknown, path: string): void => {
    if (typeof schema.$ref === 'string') {
      const target = defs[schema.$ref.replace('#/$defs/', '')];
      if (target === undefined) throw new Error(`unresolved ${schema.$ref}`);
      visit(target, v, path);
    }
    const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.length > 0 && !types.some((t) => typeMatches(String(t), v))) {
      errors.push(`${path}: type`);
      return;
    }
    if ('const' in schema && v !== schema.const) errors.push(`${path}: const`);
    if (Array.isArray(schema.enum) && !schema.enum.includes(v)) errors.push(`${path}: enum`);
    if (typeof v === 'number') {
      if (typeof schema.minimum === 'number' && v < schema.minimum) errors.push(`${path}: minimum`);
      if (typeof schema.maximum === 'number' && v > schema.maximum) errors.push(`${path}: maximum`);
      if (typeof schema.exclusiveMinimum === 'number' && v <= schema.exclusiveMinimum)
        errors.push(`${path}: exclusiveMinimum`);
      if (typeof schema.exclusiveMaximum === 'number' && v >= schema.exclusiveMaximum)
        errors.push(`${path}: exclusiveMaximum`);
    }
    if (typeof v === 'string') {
      if (typeof schema.minLength === 'number' && v.length < schema.minLength)
        errors.push(`${path}: minLength`);
      if (typeof schema.maxLength === 'number' && v.length > schema.maxLength)
        errors.push(`${path}: maxLength`);
      if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(v))
        errors.push(`${path}: pattern`);
    }
    if (Array.isArray(v)) {
      if (typeof schema.minItems === 'number' && v.length < schema.minItems) errors.push(`${path}: minItems`);
      if (typeof schema.maxItems === 'number' && v.length > schema.maxItems) errors.push(`${path}: maxItems`);
      if (schema.uniqueItems === true && new Set(v.map((x) => JSON.stringify(x))).size !== v.length)
        errors.push(`${path}: uniqueItems`);
      if (isObject(schema.items))
        v.forEach((item, i) => visit(schema.items as Schema, item, `${path}[${i}]`));
    }
    if (isObject(v)) {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const size = Object.keys(v).length;
      if (typeof schema.minProperties === 'number' && size < schema.minProperties)
        errors.push(`${path}: minProperties`);
      if (typeof schema.maxProperties === 'number' && size > schema.maxProperties)
        errors.push(`${path}: maxProperties`);
      for (const key of (schema.required ?? []) as string[])
        if (!(key in v)) errors.push(`${path}.${key}: required`);
      for (const [key, child] of Object.entries(v)) {
        if (isObject(schema.propertyNames)) visit(schema.propertyNames, key, `${path}.${key} (key)`);
        if (properties[key] !== undefined) visit(properties[key], child, `${path}.${key}`);
        else if (schema.additionalProperties === false) errors.push(`${path}.${key}: additionalProperties`);
        else if (isObject(schema.additionalProperties))
          visit(schema.additionalProperties, child, `${path}.${key}`);
      }
    }
    const matches = (branches: unknown[]): number =>
      branches.filter((branch) => isObject(branch) && check({ ...branch, $defs: defs }, v).length === 0)
        .length;
    if (Array.isArray(schema.anyOf) && matches(schema.anyOf) === 0) errors.push(`${path}: anyOf`);
    if (Array.isArray(schema.oneOf) && matches(schema.oneOf) !== 1) errors.push(`${path}: oneOf`);
    if (isObject(schema.not) && check({ ...schema.not, $defs: defs }, v).length === 0)
      errors.push(`${path}: not`);
  };

  visit(root, value, '$');
  return errors;
}

/** Every keyword used anywhere in a schema document. */
export function keywordsOf(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) keywordsOf(item, into);
  else if (isObject(schema))
    for (const [key, child] of Object.entries(schema)) {
      into.add(key);
      // Names under these keywords are property or definition names, not keywords.
      if (key === 'properties' || key === '$defs')
        for (const sub of Object.values(child as object)) keywordsOf(sub, into);
      else if (key !== 'enum' && key !== 'const' && key !== 'default' && key !== 'required')
        keywordsOf(child, into);
    }
  return into;
}
