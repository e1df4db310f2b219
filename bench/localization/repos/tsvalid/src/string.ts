import { message } from "./messages";
import { INVALID, invalidType, ParseContext, Parsed, Schema } from "./schema";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]{2,}$/i;

export class StringSchema extends Schema<string> {
  private trimInput = false;
  private lowercase = false;

  _parse(input: unknown, ctx: ParseContext): Parsed<string> {
    if (typeof input !== "string") return invalidType(ctx, "string", input);
    const checked = this.runChecks(input, ctx);
    if (checked === INVALID) return INVALID;
    let value = checked;
    if (this.trimInput) value = value.trim();
    if (this.lowercase) value = value.toLowerCase();
    return value;
  }

  min(length: number, text?: string): StringSchema {
    return this.withCheck({
      code: "too_small",
      test: (s) => s.length >= length,
      message: text ?? message("string_min", { min: length }),
      params: { min: length },
    });
  }

  max(length: number, text?: string): StringSchema {
    return this.withCheck({
      code: "too_big",
      test: (s) => s.length <= length,
      message: text ?? message("string_max", { max: length }),
      params: { max: length },
    });
  }

  length(length: number, text?: string): StringSchema {
    return this.withCheck({
      code: "invalid_string",
      test: (s) => s.length === length,
      message: text ?? message("string_length", { length }),
      params: { length },
    });
  }

  between(min: number, max: number, text?: string): StringSchema {
    return this.withCheck({
      code: "invalid_string",
      test: (s) => s.length >= min && s.length <= max,
      message: text ?? message("string_between", { min, max }),
      params: { min, max },
    });
  }

  email(text?: string): StringSchema {
    return this.withCheck({ code: "invalid_string", test: (s) => EMAIL.test(s), message: text ?? message("email") });
  }

  url(text?: string): StringSchema {
    return this.withCheck({
      code: "invalid_string",
      test: (s) => {
        try {
          const parsed = new URL(s);
          return parsed.protocol === "http:" || parsed.protocol === "https:";
        } catch {
          return false;
        }
      },
      message: text ?? message("url"),
    });
  }

  regex(pattern: RegExp, text?: string): StringSchema {
    return this.withCheck({
      code: "invalid_string",
      test: (s) => {
        pattern.lastIndex = 0;
        return pattern.test(s);
      },
      message: text ?? message("regex"),
    });
  }

  nonempty(text?: string): StringSchema {
    return this.min(1, text ?? message("required"));
  }

  /** Strip surrounding whitespace before validating. */
  trim(): StringSchema {
    const copy = this.clone();
    copy.trimInput = true;
    return copy;
  }

  toLowerCase(): StringSchema {
    const copy = this.clone();
    copy.lowercase = true;
    return copy;
  }
}
