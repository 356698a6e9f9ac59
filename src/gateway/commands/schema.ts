/** `gateway schema [--markdown]`: the configuration JSON Schema, or the generated field reference. */
import { renderConfigReference } from '../config/docs.js';
import { configFileJsonSchema } from '../config/json-schema.js';

export function runSchema(format: 'json' | 'markdown', out: NodeJS.WritableStream): number {
  out.write(
    format === 'markdown' ? renderConfigReference() : `${JSON.stringify(configFileJsonSchema(), null, 2)}\n`,
  );
  return 0;
}
