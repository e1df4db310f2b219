import { message } from "./messages";
import { invalidType, ParseContext, Parsed, Schema } from "./schema";

export class NumberSchema extends Schema<number> {
  _parse(input: unknown, ctx: ParseContext): Parsed<number> {
    if (typeof input !== "number" || Number.isNaN(input)) return invalidType(ctx, "number", input);
    return this.runChecks(input, ctx);
  }

  int(text?: string): NumberSchema {
    return this.withCheck({ code: "not_integer", test: Number.isInteger, message: text ?? message("number_int") });
  }

  min(minimum: number, text?: string): NumberSchema {
    return this.withCheck({
      code: "too_small",
      test: (n) => n >= minimum,
      message: text ?? message("number_min", { min: minimum }),
      params: { min: minimum },
    });
  }

  max(maximum: number, text?: string): NumberSchema {
    return this.withCheck({
      code: "too_big",
      test: (n) => n <= maximum,
      message: text ?? message("number_max", { max: maximum }),
      params: { max: maximum },
    });
  }

  positive(text?: string): NumberSchema {
    return this.withCheck({
      code: "too_small",
      test: (n) => n > 0,
      message: text ?? "Must be greater than 0",
      params: { min: 0, exclusive: true },
    });
  }

  nonnegative(text?: string): NumberSchema {
    return this.min(0, text);
  }

  finite(text?: string): NumberSchema {
    return this.withCheck({ code: "custom", test: Number.isFinite, message: text ?? "Must be finite" });
  }

  /** Accepts values that are a whole multiple of `step` (works for decimal steps such as 0.01). */
  multipleOf(step: number, text?: string): NumberSchema {
    if (step <= 0) throw new RangeError("multipleOf step must be positive");
    return this.withCheck({
      code: "not_multiple_of",
      test: (n) => n % step === 0,
      message: text ?? message("number_multiple", { step }),
      params: { step },
    });
  }
}
