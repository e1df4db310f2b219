import { Issue } from "./errors";
import { message } from "./messages";
import { addIssue, INVALID, invalidType, LiteralSchema, ParseContext, Parsed, Schema } from "./schema";
import { ObjectSchema, Shape } from "./object";
import { isPlainObject } from "./utils";

export class UnionSchema<T> extends Schema<T> {
  constructor(readonly options: Schema<T>[]) {
    super();
    if (options.length < 2) throw new TypeError("a union needs at least two options");
  }

  /**
   * The first option that accepts the input wins. When none does, report the issues of the option
   * that got furthest (the deepest issue path), since that is most likely the one the user meant.
   */
  _parse(input: unknown, ctx: ParseContext): Parsed<T> {
    let best: Issue[] | undefined;
    for (const option of this.options) {
      const sub: ParseContext = { issues: [], path: [...ctx.path] };
      const parsed = option._parse(input, sub);
      if (parsed !== INVALID && sub.issues.length === 0) return this.runChecks(parsed, ctx);
      if (best === undefined) best = sub.issues;
    }
    if (best && best.length > 0) ctx.issues.push(...best);
    else addIssue(ctx, "invalid_union", message("invalid_union"));
    return INVALID;
  }
}

function depth(issues: Issue[]): number {
  return Math.max(0, ...issues.map((issue) => issue.path.length));
}

export class DiscriminatedUnionSchema<T> extends Schema<T> {
  private readonly byValue = new Map<unknown, ObjectSchema<Shape>>();

  constructor(readonly key: string, options: ObjectSchema<Shape>[]) {
    super();
    for (const option of options) {
      const literal = option.shape[key];
      if (!(literal instanceof LiteralSchema)) {
        throw new TypeError(`discriminator "${key}" must be a literal in every option`);
      }
      this.byValue.set(literal.value, option);
    }
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T> {
    if (!isPlainObject(input)) return invalidType(ctx, "object", input);
    const tag = input[this.key];
    const option = this.byValue.get(tag);
    const parsed = option!._parse(input, ctx);
    return parsed === INVALID ? INVALID : this.runChecks(parsed as T, ctx);
  }

  get discriminators(): unknown[] {
    return [...this.byValue.keys()];
  }
}

export { depth as issueDepth };
