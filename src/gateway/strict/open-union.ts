import { z } from 'zod';

type TypedOptions = readonly [z.core.$ZodTypeDiscriminable, ...z.core.$ZodTypeDiscriminable[]];

/**
 * A union of objects told apart by their `type`, open to types it does not know: an object whose
 * `type` is one of the options' is checked against that option, field by field; an object whose
 * `type` is any other string passes as it is. For the unions that a reference API grows faster than
 * a schema can follow (content blocks, tools: each beta adds members), so a new member reaches the
 * upstream that understands it instead of being refused here.
 *
 * `reserved` names types that are known elsewhere but not allowed in this position (a `tool_use`
 * block inside a system prompt): those are refused like a bad value, not passed as unknown.
 *
 * The catch-all comes second and its refusal aborts, so a failed value reports both branches, and
 * the strict validator's rule (the deepest branch, the first on a tie) names the bad field of the
 * known type, or lists the allowed types, rather than the catch-all's "not allowed here".
 */
export function openUnion<const Options extends TypedOptions>(
  options: Options,
  reserved: Iterable<string> = [],
) {
  const known = new Set<unknown>(reserved);
  for (const option of options) {
    // The same values `discriminatedUnion` dispatches on (literal, enum, optional and nullable alike).
    for (const value of option._zod.propValues.type ?? []) known.add(value);
  }
  const unknownTyped = z.looseObject({
    type: z.string().refine((type) => !known.has(type), {
      abort: true,
      error: (issue) => `type ${JSON.stringify(issue.input)} is not allowed here`,
    }),
  });
  return z.union([z.discriminatedUnion('type', options), unknownTyped]);
}
