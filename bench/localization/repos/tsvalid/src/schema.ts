import { Issue, IssueCode, PathSegment, ValidationError } from "./errors";
import { message } from "./messages";
import { getType } from "./utils";

export interface ParseContext {
  issues: Issue[];
  path: PathSegment[];
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: ValidationError };

/** Returned by `_parse` when the input is invalid (the reasons are in `ctx.issues`). */
export const INVALID: unique symbol = Symbol("tsvalid.invalid");
export type Parsed<T> = T | typeof INVALID;

export interface Check<T> {
  code: IssueCode;
  test: (value: T) => boolean;
  message: string;
  params?: Record<string, unknown>;
}

export function addIssue(ctx: ParseContext, code: IssueCode, text: string, params?: Record<string, unknown>): void {
  ctx.issues.push({ code, path: [...ctx.path], message: text, params });
}

/** Run `fn` with `segment` appended to the current path. */
export function withPath<T>(ctx: ParseContext, segment: PathSegment, fn: () => T): T {
  ctx.path.push(segment);
  try {
    return fn();
  } finally {
    ctx.path.pop();
  }
}

export function invalidType(ctx: ParseContext, expected: string, input: unknown): typeof INVALID {
  if (input === undefined) {
    addIssue(ctx, "invalid_type", message("required"), { expected, received: "undefined" });
  } else {
    const received = getType(input);
    addIssue(ctx, "invalid_type", message("invalid_type", { expected, received }), { expected, received });
  }
  return INVALID;
}

export abstract class Schema<Out> {
  declare readonly _output: Out;
  protected checks: Check<Out>[] = [];

  /** Validate `input`, recording issues in `ctx`; returns the parsed value or INVALID. */
  abstract _parse(input: unknown, ctx: ParseContext): Parsed<Out>;

  parse(input: unknown): Out {
    const result = this.safeParse(input);
    if (!result.ok) throw result.error;
    return result.value;
  }

  safeParse(input: unknown): ParseResult<Out> {
    const ctx: ParseContext = { issues: [], path: [] };
    const value = this._parse(input, ctx);
    if (value === INVALID || ctx.issues.length > 0) {
      return { ok: false, error: new ValidationError(ctx.issues) };
    }
    return { ok: true, value };
  }

  is(input: unknown): input is Out {
    return this.safeParse(input).ok;
  }

  protected runChecks(value: Out, ctx: ParseContext): Parsed<Out> {
    let valid = true;
    for (const check of this.checks) {
      if (!check.test(value)) {
        addIssue(ctx, check.code, check.message, check.params);
        valid = false;
      }
    }
    return valid ? value : INVALID;
  }

  protected clone(): this {
    const copy = Object.create(Object.getPrototypeOf(this)) as this;
    return Object.assign(copy, this);
  }

  protected withCheck(check: Check<Out>): this {
    const copy = this.clone();
    copy.checks = [...this.checks, check];
    return copy;
  }

  optional(): OptionalSchema<Out> {
    return new OptionalSchema(this);
  }

  nullable(): NullableSchema<Out> {
    return new NullableSchema(this);
  }

  default(value: Out): DefaultSchema<Out> {
    return new DefaultSchema(this, value);
  }

  transform<T>(fn: (value: Out) => T): TransformSchema<Out, T> {
    return new TransformSchema(this, fn);
  }

  preprocess(fn: (input: unknown) => unknown): PreprocessSchema<Out> {
    return new PreprocessSchema(this, fn);
  }

  refine(test: (value: Out) => boolean, text = "Invalid value"): this {
    return this.withCheck({ code: "custom", test, message: text });
  }
}

export class OptionalSchema<T> extends Schema<T | undefined> {
  constructor(readonly inner: Schema<T>) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T | undefined> {
    if (input === undefined) return undefined;
    return this.inner._parse(input, ctx);
  }

  unwrap(): Schema<T> {
    return this.inner;
  }
}

export class NullableSchema<T> extends Schema<T | null> {
  constructor(readonly inner: Schema<T>) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T | null> {
    if (input === null) return null;
    return this.inner._parse(input, ctx);
  }
}

export class DefaultSchema<T> extends Schema<T> {
  constructor(readonly inner: Schema<T>, readonly defaultValue: T) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T> {
    const value = input === undefined ? this.defaultValue : input;
    return this.inner._parse(value, ctx);
  }
}

export class TransformSchema<In, Out> extends Schema<Out> {
  constructor(readonly inner: Schema<In>, readonly fn: (value: In) => Out) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<Out> {
    const value = this.inner._parse(input, ctx);
    return this.fn(value as In);
  }
}

export class PreprocessSchema<T> extends Schema<T> {
  constructor(readonly inner: Schema<T>, readonly fn: (input: unknown) => unknown) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T> {
    return this.inner._parse(this.fn(input), ctx);
  }
}

export class BooleanSchema extends Schema<boolean> {
  _parse(input: unknown, ctx: ParseContext): Parsed<boolean> {
    if (typeof input !== "boolean") return invalidType(ctx, "boolean", input);
    return this.runChecks(input, ctx);
  }
}

export class LiteralSchema<T extends string | number | boolean> extends Schema<T> {
  constructor(readonly value: T) {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<T> {
    if (input !== this.value) {
      addIssue(ctx, "invalid_literal", message("invalid_literal", { expected: JSON.stringify(this.value) }));
      return INVALID;
    }
    return this.value;
  }
}

export class UnknownSchema extends Schema<unknown> {
  _parse(input: unknown): Parsed<unknown> {
    return input;
  }
}
