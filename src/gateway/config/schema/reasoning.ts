/** Reasoning translation (spec 2.6). */
import { z } from 'zod';
import { EFFORTS, type Effort } from './constants.js';
import { EffortSchema, FORBIDDEN_PATH_SEGMENTS, TARGET_PATH_PATTERN, codeList } from './fields.js';

export const ReasoningWriteSchema = z
  .strictObject({
    target_path: z
      .string()
      .regex(TARGET_PATH_PATTERN, {
        error:
          'must be a path of the form `/name` or `/a/b` (JSON Pointer: non-empty segments, `~0` for `~`, `~1` for `/`)',
      })
      .refine((path) => !path.split('/').some((segment) => FORBIDDEN_PATH_SEGMENTS.has(segment)), {
        error: 'must not contain the segments `__proto__`, `constructor` or `prototype`',
      })
      .describe(
        'Where the value is written in the upstream request body: a JSON Pointer such as `/reasoning_effort` or `/chat_template_kwargs/enable_thinking`. Missing intermediate objects are created; an existing value is replaced.',
      ),
    values: z
      .partialRecord(EffortSchema, z.union([z.string(), z.number(), z.boolean()]))
      .refine((values) => Object.keys(values).length > 0, {
        error:
          'must map at least one effort; list efforts the upstream cannot serve in `unsupported_efforts`',
      })
      .describe(
        'Effort -> value written at `target_path` (string, number or boolean). A number is a token budget: the request must then carry a completion-token limit above it.',
      ),
  })
  .meta({
    id: 'ReasoningWrite',
    title: 'Reasoning write',
    description: 'One upstream field written for each supported effort.',
  });

export const ReasoningSurfaceSchema = z
  .strictObject({
    writes: z
      .array(ReasoningWriteSchema)
      .describe(
        'Fields written into the upstream body for a client effort. Every write maps the same set of efforts. An empty list (with all seven efforts unsupported) refuses every effort.',
      ),
    unsupported_efforts: z
      .array(EffortSchema)
      .meta({ uniqueItems: true })
      .describe(
        'Efforts this upstream cannot serve; a request asking for one is refused with 400 `unsupported_reasoning_effort`. Together with the mapped efforts it names all seven efforts exactly once.',
      ),
  })
  .superRefine((surface, ctx) => {
    const mappedBy = surface.writes.map((write) => Object.keys(write.values) as Effort[]);
    const reference = new Set(mappedBy[0] ?? []);
    // Rule 1: every write maps the same efforts, compared against the first write.
    mappedBy.slice(1).forEach((efforts, offset) => {
      const index = offset + 1;
      for (const effort of efforts)
        if (!reference.has(effort))
          ctx.addIssue({
            code: 'custom',
            path: ['writes', index, 'values', effort],
            message: `maps \`${effort}\`, which writes[0] does not: every write of a surface must map the same efforts`,
          });
      const missing = [...reference].filter((effort) => !efforts.includes(effort));
      if (missing.length > 0)
        ctx.addIssue({
          code: 'custom',
          path: ['writes', index, 'values'],
          message: `does not map ${codeList(missing)}, which writes[0] maps: every write of a surface must map the same efforts`,
        });
    });
    // Writes must not overlap, or one would silently overwrite (part of) the other.
    const paths = surface.writes.map((write) => write.target_path);
    paths.forEach((path, index) => {
      const clash = paths.findIndex(
        (other, j) =>
          j < index && (other === path || other.startsWith(`${path}/`) || path.startsWith(`${other}/`)),
      );
      if (clash >= 0)
        ctx.addIssue({
          code: 'custom',
          path: ['writes', index, 'target_path'],
          message:
            paths[clash] === path
              ? `duplicate target_path \`${path}\` (also writes[${clash}])`
              : `\`${path}\` overlaps writes[${clash}] \`${paths[clash]}\`: one write would overwrite the other`,
        });
    });
    // Rule 2: mapped and unsupported efforts are disjoint and together name all seven.
    const mapped = new Set(mappedBy.flat());
    const seen = new Map<Effort, number>();
    surface.unsupported_efforts.forEach((effort, index) => {
      const earlier = seen.get(effort);
      if (earlier !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['unsupported_efforts', index],
          message: `duplicate effort \`${effort}\` (already listed at index ${earlier})`,
        });
      else seen.set(effort, index);
      if (mapped.has(effort))
        ctx.addIssue({
          code: 'custom',
          path: ['unsupported_efforts', index],
          message: `\`${effort}\` is mapped by the writes and listed as unsupported: an effort is one or the other`,
        });
    });
    const uncovered = EFFORTS.filter((effort) => !mapped.has(effort) && !seen.has(effort));
    if (uncovered.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['unsupported_efforts'],
        message: `${codeList(uncovered)} ${uncovered.length === 1 ? 'is' : 'are'} neither mapped by the writes nor listed as unsupported: together they must name all seven efforts (${EFFORTS.join(', ')})`,
      });
  })
  .meta({
    id: 'ReasoningSurface',
    title: 'Reasoning surface',
    description:
      'How one request surface translates the client effort: the fields written upstream and the efforts refused.',
  });

export const ReasoningTranslationSchema = z
  .strictObject({
    chat_completions: ReasoningSurfaceSchema.optional().describe(
      'Translation of `reasoning_effort` in chat-completions requests.',
    ),
    responses: ReasoningSurfaceSchema.optional().describe(
      'Translation of `reasoning.effort` in Responses requests.',
    ),
  })
  .refine(
    (translation) => translation.chat_completions !== undefined || translation.responses !== undefined,
    {
      error: 'configure at least one surface: `chat_completions` or `responses`',
    },
  )
  .meta({
    id: 'ReasoningTranslation',
    title: 'Reasoning translation',
    description:
      'Reasoning-effort translation per request surface. A client request without an effort injects nothing; a surface that is not configured forwards the effort unchanged.',
  });

export type ReasoningTranslation = z.output<typeof ReasoningTranslationSchema>;
export type ReasoningSurface = z.output<typeof ReasoningSurfaceSchema>;
export type ReasoningWrite = z.output<typeof ReasoningWriteSchema>;
