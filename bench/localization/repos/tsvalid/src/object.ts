import { message } from "./messages";
import { addIssue, INVALID, invalidType, OptionalSchema, ParseContext, Parsed, Schema, withPath } from "./schema";

export type Shape = Record<string, Schema<unknown>>;
export type InferShape<S extends Shape> = { [K in keyof S]: S[K]["_output"] };
export type UnknownKeys = "strip" | "strict" | "passthrough";

export class ObjectSchema<S extends Shape> extends Schema<InferShape<S>> {
  constructor(readonly shape: S, readonly unknownKeys: UnknownKeys = "strip") {
    super();
  }

  _parse(input: unknown, ctx: ParseContext): Parsed<InferShape<S>> {
    if (typeof input !== "object" || Array.isArray(input)) return invalidType(ctx, "object", input);
    const record = input as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    let valid = true;
    for (const key of Object.keys(this.shape)) {
      const value = record[key];
      const parsed = withPath(ctx, key, () => this.shape[key]._parse(value, ctx));
      if (parsed === INVALID) valid = false;
      else if (parsed !== undefined || key in record) out[key] = parsed;
    }
    const extra = Object.keys(record).filter((key) => !(key in this.shape));
    if (extra.length > 0) {
      if (this.unknownKeys === "strict") {
        addIssue(ctx, "unrecognized_keys", message("unrecognized_keys", { keys: extra.map((k) => `'${k}'`).join(", ") }), {
          keys: extra,
        });
        valid = false;
      } else if (this.unknownKeys === "passthrough") {
        for (const key of extra) out[key] = record[key];
      }
    }
    if (!valid) return INVALID;
    return this.runChecks(out as InferShape<S>, ctx);
  }

  strict(): ObjectSchema<S> {
    return new ObjectSchema(this.shape, "strict");
  }

  passthrough(): ObjectSchema<S> {
    return new ObjectSchema(this.shape, "passthrough");
  }

  strip(): ObjectSchema<S> {
    return new ObjectSchema(this.shape, "strip");
  }

  partial(): ObjectSchema<{ [K in keyof S]: OptionalSchema<S[K]["_output"]> }> {
    const shape: Record<string, Schema<unknown>> = {};
    for (const [key, schema] of Object.entries(this.shape)) {
      shape[key] = schema instanceof OptionalSchema ? schema : schema.optional();
    }
    return new ObjectSchema(shape, this.unknownKeys) as never;
  }

  pick<K extends keyof S & string>(keys: K[]): ObjectSchema<Pick<S, K>> {
    const shape = {} as Pick<S, K>;
    for (const key of keys) shape[key] = this.shape[key];
    return new ObjectSchema(shape);
  }

  omit<K extends keyof S & string>(keys: K[]): ObjectSchema<Omit<S, K>> {
    const shape: Record<string, Schema<unknown>> = { ...this.shape };
    for (const key of keys) delete shape[key];
    return new ObjectSchema(shape as Omit<S, K>, this.unknownKeys);
  }

  extend<E extends Shape>(extra: E): ObjectSchema<Omit<S, keyof E> & E> {
    return new ObjectSchema({ ...this.shape, ...extra } as Omit<S, keyof E> & E, this.unknownKeys);
  }

  keyof(): string[] {
    return Object.keys(this.shape);
  }
}
