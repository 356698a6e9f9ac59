/**
 * JSON Schema (draft 2020-12) of the configuration, generated from the zod schema for editors, the
 * Helm values schema and `gateway schema`. It describes the input side (`io: 'input'`), so fields
 * with defaults are optional, as they are in the file. Cross-field rules are not expressible here;
 * `gateway validate` checks them, and the generated reference lists them.
 */
import { z } from 'zod';
import { GatewayConfigEnvelopeSchema, GatewayConfigSchema, KUBERNETES_RULES_KEY } from './schema/index.js';

/** A JSON Schema document as plain data. */
export type JsonSchema = { [key: string]: unknown };

function generate(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    override: ({ jsonSchema }) => {
      // z.int() states the safe-integer range on every integer; it is noise for configuration values.
      const node = jsonSchema as JsonSchema;
      // The CEL rules are for the API server (`gateway crd`); JSON Schema states them in the docs.
      delete node[KUBERNETES_RULES_KEY];
      if (node.type === 'integer') {
        if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
        if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
      }
    },
  }) as JsonSchema;
}

let bare: JsonSchema | undefined;
let combined: JsonSchema | undefined;

/** The schema of the bare configuration (`{"targets": ...}`). */
export function bareConfigJsonSchema(): JsonSchema {
  bare ??= {
    ...generate(GatewayConfigSchema),
    title: 'Gateway configuration',
  };
  return bare;
}

/**
 * The schema of a configuration file: the bare configuration or its envelope (exactly one of the
 * two, which is what `gateway schema` prints).
 */
export function configFileJsonSchema(): JsonSchema {
  if (combined === undefined) {
    const generated = generate(z.xor([GatewayConfigSchema, GatewayConfigEnvelopeSchema]));
    const { $schema, ...rest } = generated;
    combined = {
      $schema,
      title: 'Gateway configuration file',
      description:
        'The gateway configuration, either bare (`targets`, `auth`, ...) or wrapped in the envelope (`apiVersion: llm-gateway.dev/v1alpha1`, `kind: GatewayConfig`, `metadata`, `spec`).',
      ...rest,
    };
  }
  return combined;
}
