import { message } from "./messages";
import { invalidType, ParseContext, Parsed, Schema } from "./schema";

export class DateSchema extends Schema<Date> {
  _parse(input: unknown, ctx: ParseContext): Parsed<Date> {
    if (!(input instanceof Date)) return invalidType(ctx, "date", input);
    return this.runChecks(input, ctx);
  }

  min(minimum: Date, text?: string): DateSchema {
    return this.withCheck({
      code: "too_small",
      test: (d) => d.getTime() >= minimum.getTime(),
      message: text ?? message("date_min", { min: minimum.toISOString() }),
      params: { min: minimum },
    });
  }

  max(maximum: Date, text?: string): DateSchema {
    return this.withCheck({
      code: "too_big",
      test: (d) => d.getTime() <= maximum.getTime(),
      message: text ?? message("date_max", { max: maximum.toISOString() }),
      params: { max: maximum },
    });
  }
}
