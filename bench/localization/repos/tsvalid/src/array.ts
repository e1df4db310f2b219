import { message } from "./messages";
import { INVALID, invalidType, ParseContext, Parsed, Schema, withPath } from "./schema";

export class ArraySchema<T> extends Schema<T[]> {
  constructor(readonly element: Schema<T>) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T[]> {
    if (!Array.isArray(input)) return invalidType(ctx, "array", input);
    const out: T[] = [];
    let valid = true;
    input.forEach((item, index) => {
      const parsed = withPath(ctx, index, () => this.element._parse(item, ctx));
      if (parsed === INVALID) valid = false;
      else out.push(parsed);
    });
    if (!valid) return INVALID;
    return this.runChecks(out, ctx);
  }

  min(count: number, text?: string): ArraySchema<T> {
    return this.withCheck({
      code: "too_small",
      test: (a) => a.length >= count,
      message: text ?? message("array_min", { min: count }),
      params: { min: count },
    });
  }

  max(count: number, text?: string): ArraySchema<T> {
    return this.withCheck({
      code: "too_big",
      test: (a) => a.length <= count,
      message: text ?? message("array_max", { max: count }),
      params: { max: count },
    });
  }

  nonempty(text?: string): ArraySchema<T> {
    return this.min(1, text);
  }

  /** No two elements may be equal; objects and arrays are compared structurally. */
  unique(text?: string): ArraySchema<T> {
    return this.withCheck({
      code: "not_unique",
      test: (a) => new Set(a).size === a.length,
      message: text ?? message("array_unique"),
    });
  }
}
