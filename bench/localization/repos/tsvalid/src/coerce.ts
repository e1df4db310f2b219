import { BooleanSchema } from "./schema";
import { DateSchema } from "./date";
import { NumberSchema } from "./number";
import { StringSchema } from "./string";

/** Numeric strings become numbers; anything else is passed through for the schema to reject. */
export function coerceNumber(input: unknown): unknown {
  if (typeof input === "string") {
    const n = Number(input.trim());
    return Number.isNaN(n) ? input : n;
  }
  if (typeof input === "bigint") return Number(input);
  return input;
}

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);

export function coerceBoolean(input: unknown): unknown {
  if (typeof input === "string") {
    const s = input.trim().toLowerCase();
    if (TRUE.has(s)) return true;
    if (FALSE.has(s)) return false;
    return input;
  }
  if (input === 1) return true;
  if (input === 0) return false;
  return input;
}

export function coerceDate(input: unknown): unknown {
  if (typeof input === "string" || typeof input === "number") return new Date(input);
  return input;
}

export function coerceString(input: unknown): unknown {
  if (input === null || input === undefined) return input;
  return typeof input === "string" ? input : String(input);
}

export const coerce = {
  number: (): NumberSchema => new NumberSchema().preprocess(coerceNumber) as unknown as NumberSchema,
  boolean: (): BooleanSchema => new BooleanSchema().preprocess(coerceBoolean) as unknown as BooleanSchema,
  date: (): DateSchema => new DateSchema().preprocess(coerceDate) as unknown as DateSchema,
  string: (): StringSchema => new StringSchema().preprocess(coerceString) as unknown as StringSchema,
};
